//! Caliper's data model and its `.cali` file format.
//!
//! * [`Variant`]: a typed value of any of the reference's types, with the
//!   text forms, comparison and arithmetic the tools need.
//! * [`Attribute`], [`Properties`]: named, typed keys with the reference's
//!   property bits and metadata.
//! * [`Node`], [`Record`], [`Entry`]: the context tree and the records
//!   (snapshots and globals) that point into it.
//! * [`MetadataDb`]: the merged metadata of any number of streams.
//! * [`cali`]: the streaming `.cali` reader and the writer.
//!
//! ```
//! use caliper_data::{MetadataDb, cali::CaliReader};
//!
//! let text = "__rec=node,id=12,attr=10,data=276,parent=3\n\
//!             __rec=node,id=13,attr=8,data=region,parent=12\n\
//!             __rec=node,id=14,attr=13,data=main\n\
//!             __rec=ctx,ref=14\n";
//! let mut db = MetadataDb::new();
//! let mut regions = Vec::new();
//! CaliReader::new(&mut db, "example").read(text.as_bytes(), |db, record| {
//!     for (attr, value) in db.expand(record) {
//!         regions.push(format!("{}={}", db.attribute(attr).unwrap().name(), value));
//!     }
//! })?;
//! assert_eq!(regions, ["region=main"]);
//! # Ok::<(), caliper_data::cali::ReadError>(())
//! ```

#![warn(missing_docs)]

pub mod attribute;
pub mod cali;
pub mod hash;
pub mod idmap;
pub mod metadb;
pub mod node;
pub mod numfmt;
pub mod properties;
pub mod record;
pub mod text;
pub mod types;
pub mod variant;

pub use attribute::Attribute;
pub use metadb::MetadataDb;
pub use node::{INV_ID, Id, Node, NodeRef, NodeStore};
pub use properties::{Properties, Scope};
pub use record::{Entry, Record, RecordKind};
pub use text::{Blob, Text};
pub use types::AttrType;
pub use variant::Variant;
