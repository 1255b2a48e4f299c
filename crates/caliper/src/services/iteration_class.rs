//! Which attributes are loop iterations (carry `class.iteration`, as
//! `iteration#mainloop` does), remembered per thread by attribute id: the
//! loop services ask on every update.

use crate::service::Runtime;
use caliper_data::Variant;
use caliper_data::node::Id;

/// A thread's answers, by attribute id: 0 not looked up, 1 an iteration
/// attribute, 2 not.
#[derive(Default)]
pub(super) struct IterationAttributes(Vec<u8>);

impl IterationAttributes {
    /// Whether `attr` carries `class` (the `class.iteration` attribute) as
    /// metadata with the value true.
    pub(super) fn contains(&mut self, cali: &dyn Runtime, class: Id, attr: Id) -> bool {
        let i = attr as usize;
        if self.0.len() <= i {
            self.0.resize(i + 1, 0);
        }
        if self.0[i] == 0 {
            let yes = cali
                .attribute_info(attr)
                .is_some_and(|info| info.metadata.iter().any(|(m, v)| *m == class && matches!(v, Variant::Bool(true))));
            self.0[i] = if yes { 1 } else { 2 };
        }
        self.0[i] == 1
    }
}
