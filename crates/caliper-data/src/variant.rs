//! [`Variant`]: one typed value of any attribute type.

use crate::numfmt;
use crate::text::{Blob, Text};
use crate::types::AttrType;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

/// A typed value (`cali_variant_t`): two words wide, cheap to clone
/// (strings and blobs are shared, see [`Text`]).
///
/// Equality is "same type and same payload" (doubles bit for bit), which is
/// what merging context-tree nodes needs. Ordering follows the reference's
/// `cali_variant_compare`: values of different types order by type code,
/// values of one type by value (strings and blobs byte-wise, doubles by
/// their IEEE total order so that the order is total).
#[derive(Clone, Debug, Default)]
pub enum Variant {
    /// No value (`inv`).
    #[default]
    Empty,
    /// An opaque blob.
    Usr(Blob),
    /// A signed integer.
    Int(i64),
    /// An unsigned integer.
    Uint(u64),
    /// A string.
    Str(Text),
    /// An address.
    Addr(u64),
    /// A double.
    Double(f64),
    /// A boolean.
    Bool(bool),
    /// A type code.
    Type(AttrType),
    /// A raw pointer value.
    Ptr(u64),
}

/// A text that is not a valid value of the expected type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueError {
    /// The type the text should have had.
    pub expected: AttrType,
    /// The offending text.
    pub text: String,
}

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid {} value \"{}\"", self.expected, self.text)
    }
}

impl std::error::Error for ValueError {}

impl Variant {
    /// The value's type (`inv` for [`Variant::Empty`]).
    pub fn attr_type(&self) -> AttrType {
        match self {
            Variant::Empty => AttrType::Inv,
            Variant::Usr(_) => AttrType::Usr,
            Variant::Int(_) => AttrType::Int,
            Variant::Uint(_) => AttrType::Uint,
            Variant::Str(_) => AttrType::String,
            Variant::Addr(_) => AttrType::Addr,
            Variant::Double(_) => AttrType::Double,
            Variant::Bool(_) => AttrType::Bool,
            Variant::Type(_) => AttrType::Type,
            Variant::Ptr(_) => AttrType::Ptr,
        }
    }

    /// Whether this is the empty value.
    pub fn is_empty(&self) -> bool {
        matches!(self, Variant::Empty)
    }

    /// A string value.
    pub fn string(s: &str) -> Variant {
        Variant::Str(Text::new(s))
    }

    /// Parses the text form of a value of type `ty`, as `.cali` files and
    /// query conditions write it.
    ///
    /// An empty text is the empty value for every type but `string`. Numbers
    /// must be complete (`12x` is an error, unlike C's `strtoll`); `usr` and
    /// `ptr` values, which the reference cannot read back at all, become the
    /// empty value when they are not hex.
    pub fn parse(ty: AttrType, text: &str) -> Result<Variant, ValueError> {
        let fail = || ValueError { expected: ty, text: text.to_string() };
        if text.is_empty() && ty != AttrType::String {
            return Ok(Variant::Empty);
        }
        Ok(match ty {
            AttrType::Inv => Variant::Empty,
            AttrType::String => Variant::string(text),
            AttrType::Int => Variant::Int(parse_int(text).ok_or_else(fail)?),
            AttrType::Uint => Variant::Uint(parse_uint(text).ok_or_else(fail)?),
            AttrType::Double => Variant::Double(numfmt::parse_double(text).ok_or_else(fail)?),
            AttrType::Bool => Variant::Bool(parse_bool(text).ok_or_else(fail)?),
            AttrType::Type => Variant::Type(AttrType::from_name(text).ok_or_else(fail)?),
            AttrType::Addr => Variant::Addr(parse_hex(text).ok_or_else(fail)?),
            AttrType::Ptr => parse_hex(text).map_or(Variant::Empty, Variant::Ptr),
            AttrType::Usr => parse_hex_bytes(text).map_or(Variant::Empty, |b| Variant::Usr(Blob::new(&b))),
        })
    }

    /// Appends the `.cali` text of the value, unescaped: numbers in decimal,
    /// doubles in their shortest exact `%g`-style form, addresses and
    /// pointers in lowercase hex, blobs as hex pairs, types by name.
    pub fn write_cali_text(&self, out: &mut Vec<u8>) {
        use std::io::Write;
        match self {
            Variant::Empty => {}
            Variant::Usr(b) => {
                for byte in b.as_bytes() {
                    write!(out, "{byte:02x}").expect("write to Vec");
                }
            }
            Variant::Int(i) => write_decimal_i64(*i, out),
            Variant::Uint(u) => write_decimal_u64(*u, out),
            Variant::Str(s) => out.extend_from_slice(s.as_bytes()),
            Variant::Addr(a) | Variant::Ptr(a) => write_hex_u64(*a, out),
            Variant::Double(d) => numfmt::write_double_cali(*d, out),
            Variant::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Variant::Type(t) => out.extend_from_slice(t.name().as_bytes()),
        }
    }

    /// The `.cali` text of the value as a string (see [`Self::write_cali_text`]).
    pub fn to_cali_string(&self) -> String {
        let mut out = Vec::new();
        self.write_cali_text(&mut out);
        String::from_utf8(out).expect("variant text is UTF-8")
    }

    /// The string, if this is a string value.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Variant::Str(s) => Some(s.as_str()),
            _ => None,
        }
    }

    /// The value as a double, for numbers and booleans.
    pub fn to_f64(&self) -> Option<f64> {
        match *self {
            Variant::Int(i) => Some(i as f64),
            Variant::Uint(u) | Variant::Addr(u) => Some(u as f64),
            Variant::Double(d) => Some(d),
            Variant::Bool(b) => Some(if b { 1.0 } else { 0.0 }),
            Variant::Str(ref s) => numfmt::parse_double(s),
            _ => None,
        }
    }

    /// The value as a signed integer (doubles are truncated).
    pub fn to_i64(&self) -> Option<i64> {
        match *self {
            Variant::Int(i) => Some(i),
            Variant::Uint(u) | Variant::Addr(u) => Some(u as i64),
            Variant::Double(d) => Some(d as i64),
            Variant::Bool(b) => Some(i64::from(b)),
            Variant::Str(ref s) => parse_int(s),
            _ => None,
        }
    }

    /// The value as an unsigned integer (doubles are truncated).
    pub fn to_u64(&self) -> Option<u64> {
        match *self {
            Variant::Int(i) => Some(i as u64),
            Variant::Uint(u) | Variant::Addr(u) | Variant::Ptr(u) => Some(u),
            Variant::Double(d) => Some(d as u64),
            Variant::Bool(b) => Some(u64::from(b)),
            Variant::Str(ref s) => parse_uint(s),
            _ => None,
        }
    }

    /// The value as a boolean (numbers: non-zero; strings: the config rules).
    pub fn to_bool(&self) -> Option<bool> {
        match *self {
            Variant::Bool(b) => Some(b),
            Variant::Int(i) => Some(i != 0),
            Variant::Uint(u) => Some(u != 0),
            Variant::Double(d) => Some(d != 0.0),
            Variant::Str(ref s) => parse_bool(s),
            _ => None,
        }
    }

    /// `self += rhs` as the aggregation kernels do it: an empty left side
    /// takes the right side; numbers of one type add natively (integers
    /// wrap); a number of another type is converted to the left side's
    /// type first. Non-numeric left sides are left alone.
    pub fn add_assign(&mut self, rhs: &Variant) {
        match self {
            Variant::Empty => *self = rhs.clone(),
            Variant::Int(a) => {
                if let Some(b) = rhs.to_i64() {
                    *a = a.wrapping_add(b);
                }
            }
            Variant::Uint(a) => {
                if let Some(b) = rhs.to_u64() {
                    *a = a.wrapping_add(b);
                }
            }
            Variant::Double(a) => {
                if let Some(b) = rhs.to_f64() {
                    *a += b;
                }
            }
            _ => {}
        }
    }

    /// The smaller of two values (numbers numerically across types, an empty
    /// side yields the other).
    pub fn min_with(&self, rhs: &Variant) -> Variant {
        self.pick(rhs, Ordering::Less)
    }

    /// The larger of two values (see [`Self::min_with`]).
    pub fn max_with(&self, rhs: &Variant) -> Variant {
        self.pick(rhs, Ordering::Greater)
    }

    fn pick(&self, rhs: &Variant, keep_self_when: Ordering) -> Variant {
        if self.is_empty() {
            return rhs.clone();
        }
        if rhs.is_empty() {
            return self.clone();
        }
        let ord = self.numeric_cmp(rhs).unwrap_or_else(|| self.cmp(rhs));
        if ord == keep_self_when || ord == Ordering::Equal { self.clone() } else { rhs.clone() }
    }

    /// Compares two numbers by value even when their types differ; `None`
    /// if either side is not a number.
    pub fn numeric_cmp(&self, rhs: &Variant) -> Option<Ordering> {
        match (self, rhs) {
            (Variant::Int(a), Variant::Int(b)) => Some(a.cmp(b)),
            (Variant::Uint(a), Variant::Uint(b)) => Some(a.cmp(b)),
            (Variant::Int(a), Variant::Uint(b)) => Some(i128::from(*a).cmp(&i128::from(*b))),
            (Variant::Uint(a), Variant::Int(b)) => Some(i128::from(*a).cmp(&i128::from(*b))),
            _ if self.attr_type().is_numeric() && rhs.attr_type().is_numeric() => {
                Some(self.to_f64()?.total_cmp(&rhs.to_f64()?))
            }
            _ => None,
        }
    }

    /// The value divided by `count` (integer division for integers), as the
    /// `avg` kernel needs it; empty for a zero count or a non-number.
    pub fn div(&self, count: u64) -> Variant {
        if count == 0 {
            return Variant::Empty;
        }
        match *self {
            Variant::Int(i) => Variant::Int(i / count as i64),
            Variant::Uint(u) => Variant::Uint(u / count),
            Variant::Double(d) => Variant::Double(d / count as f64),
            _ => Variant::Empty,
        }
    }

    fn type_rank(&self) -> u8 {
        self.attr_type() as u8
    }
}

/// Renders the value the way the reference's `to_string` does for reports,
/// tables and JSON: doubles with `%f`, booleans as `true`/`false`, addresses
/// and pointers in hex, blobs as hex bytes each followed by `:`.
impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Variant::Empty => Ok(()),
            Variant::Usr(b) => {
                for byte in b.as_bytes() {
                    write!(f, "{byte:02x}:")?;
                }
                Ok(())
            }
            Variant::Int(i) => write!(f, "{i}"),
            Variant::Uint(u) => write!(f, "{u}"),
            Variant::Str(s) => f.write_str(s),
            Variant::Addr(a) | Variant::Ptr(a) => write!(f, "{a:x}"),
            Variant::Double(d) => f.write_str(&numfmt::double_fixed_string(*d)),
            Variant::Bool(b) => write!(f, "{b}"),
            Variant::Type(t) => f.write_str(t.name()),
        }
    }
}

impl PartialEq for Variant {
    fn eq(&self, other: &Variant) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Variant {}

impl PartialOrd for Variant {
    fn partial_cmp(&self, other: &Variant) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Variant {
    fn cmp(&self, other: &Variant) -> Ordering {
        match (self, other) {
            (Variant::Empty, Variant::Empty) => Ordering::Equal,
            (Variant::Usr(a), Variant::Usr(b)) => a.cmp(b),
            (Variant::Int(a), Variant::Int(b)) => a.cmp(b),
            (Variant::Uint(a), Variant::Uint(b)) => a.cmp(b),
            (Variant::Str(a), Variant::Str(b)) => a.cmp(b),
            (Variant::Addr(a), Variant::Addr(b)) => a.cmp(b),
            (Variant::Double(a), Variant::Double(b)) => a.total_cmp(b),
            (Variant::Bool(a), Variant::Bool(b)) => a.cmp(b),
            (Variant::Type(a), Variant::Type(b)) => a.cmp(b),
            (Variant::Ptr(a), Variant::Ptr(b)) => a.cmp(b),
            _ => self.type_rank().cmp(&other.type_rank()),
        }
    }
}

impl Hash for Variant {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u8(self.type_rank());
        match self {
            Variant::Empty => {}
            Variant::Usr(b) => b.hash(state),
            Variant::Int(i) => i.hash(state),
            Variant::Uint(u) | Variant::Addr(u) | Variant::Ptr(u) => u.hash(state),
            Variant::Str(s) => s.hash(state),
            Variant::Double(d) => d.to_bits().hash(state),
            Variant::Bool(b) => b.hash(state),
            Variant::Type(t) => t.hash(state),
        }
    }
}

macro_rules! variant_from {
    ($($t:ty => $arm:ident as $as:ty),* $(,)?) => {
        $(impl From<$t> for Variant {
            fn from(v: $t) -> Variant {
                Variant::$arm(v as $as)
            }
        })*
    };
}

variant_from!(
    i64 => Int as i64,
    i32 => Int as i64,
    u64 => Uint as u64,
    u32 => Uint as u64,
    usize => Uint as u64,
    f64 => Double as f64,
);

impl From<bool> for Variant {
    fn from(b: bool) -> Variant {
        Variant::Bool(b)
    }
}

impl From<&str> for Variant {
    fn from(s: &str) -> Variant {
        Variant::string(s)
    }
}

impl From<String> for Variant {
    fn from(s: String) -> Variant {
        Variant::string(&s)
    }
}

impl From<Text> for Variant {
    fn from(s: Text) -> Variant {
        Variant::Str(s)
    }
}

impl From<AttrType> for Variant {
    fn from(t: AttrType) -> Variant {
        Variant::Type(t)
    }
}

/// Parses a signed decimal integer with an optional sign.
pub fn parse_int(text: &str) -> Option<i64> {
    text.parse().ok()
}

/// Parses an unsigned decimal integer (digits only).
pub fn parse_uint(text: &str) -> Option<u64> {
    if text.starts_with('+') {
        return None;
    }
    text.parse().ok()
}

/// Parses a boolean by the reference's rules: `true`/`t`/`false`/`f` in any
/// case, or an unsigned integer (non-zero is true).
pub fn parse_bool(text: &str) -> Option<bool> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("true") || t.eq_ignore_ascii_case("t") {
        Some(true)
    } else if t.eq_ignore_ascii_case("false") || t.eq_ignore_ascii_case("f") {
        Some(false)
    } else {
        parse_uint(t).map(|n| n != 0)
    }
}

fn parse_hex(text: &str) -> Option<u64> {
    let digits = text.strip_prefix("0x").unwrap_or(text);
    if digits.is_empty() || digits.starts_with('+') {
        return None;
    }
    u64::from_str_radix(digits, 16).ok()
}

/// Hex pairs, optionally each followed by `:` (the report form).
fn parse_hex_bytes(text: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = text.bytes().filter(|&b| b != b':').collect();
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    digits
        .chunks(2)
        .map(|pair| {
            let s = std::str::from_utf8(pair).ok()?;
            u8::from_str_radix(s, 16).ok()
        })
        .collect()
}

/// Appends the decimal text of `value` without going through `fmt`: two
/// digits at a time from a table, as a writer of `.cali` files writes a
/// handful of numbers per line.
pub fn write_decimal_u64(mut value: u64, out: &mut Vec<u8>) {
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
        2021222324252627282930313233343536373839\
        4041424344454647484950515253545556575859\
        6061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899";
    let digits = decimal_digits(value);
    let mut text = [0u8; 20];
    let mut end = digits;
    while value >= 100 {
        let pair = (value % 100) as usize * 2;
        value /= 100;
        end -= 2;
        text[end..end + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if value >= 10 {
        let pair = value as usize * 2;
        text[..2].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        text[0] = b'0' + value as u8;
    }
    append_prefix(out, &text, digits);
}

/// The number of decimal digits of `value` (1 for 0): from its bit length
/// times log10(2) (1233 / 4096), less one where the value is under the
/// power of ten that guess reaches; a third of the cost of `ilog10`.
fn decimal_digits(value: u64) -> usize {
    const POWERS: [u64; 20] = {
        let mut powers = [1u64; 20];
        let mut k = 1;
        while k < 20 {
            powers[k] = powers[k - 1] * 10;
            k += 1;
        }
        powers
    };
    // Powers of ten past 1 are even: `| 1` moves no value across one.
    let value = value | 1;
    let guess = (((u64::BITS - value.leading_zeros()) * 1233) >> 12) as usize;
    guess + 1 - usize::from(value < POWERS[guess])
}

/// Appends the lower-case hexadecimal text of `value` (no `0x`) without
/// going through `fmt`.
pub fn write_hex_u64(value: u64, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digits = (u64::BITS - value.leading_zeros()).div_ceil(4).max(1) as usize;
    let mut text = [0u8; 16];
    for (n, digit) in text[..digits].iter_mut().enumerate() {
        *digit = HEX[(value >> (4 * (digits - 1 - n)) & 15) as usize];
    }
    append_prefix(out, &text, digits);
}

/// Appends the first `len` bytes of `text`: the whole array, then the rest
/// cut, a copy of constant size that the compiler inlines where a copy of
/// `len` bytes called `memmove` for each number (with the digits made one
/// at a time, a fifth of the time of writing a compiler's call arcs).
#[inline]
fn append_prefix<const N: usize>(out: &mut Vec<u8>, text: &[u8; N], len: usize) {
    let start = out.len();
    out.extend_from_slice(text);
    out.truncate(start + len);
}

fn write_decimal_i64(value: i64, out: &mut Vec<u8>) {
    if value < 0 {
        out.push(b'-');
    }
    write_decimal_u64(value.unsigned_abs(), out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_as_fmt_writes_them() {
        let cases =
            [0, 1, 9, 10, 15, 16, 99, 100, 255, 256, 4095, 4096, 999_999, u64::from(u32::MAX), u64::MAX - 1, u64::MAX];
        let powers = (0..64).flat_map(|k| [(1u64 << k) - 1, 1 << k, (1 << k) + 1]);
        let tens = (0..20).map(|k| 10u64.pow(k)).flat_map(|t| [t - 1, t, t + 1]);
        for value in cases.into_iter().chain(powers).chain(tens) {
            let mut out = b"x=".to_vec();
            write_decimal_u64(value, &mut out);
            out.push(b',');
            write_hex_u64(value, &mut out);
            assert_eq!(String::from_utf8(out).unwrap(), format!("x={value},{value:x}"));
        }
    }

    proptest::proptest! {
        #[test]
        fn any_number_is_written_as_fmt_writes_it(value: u64) {
            let mut out = Vec::new();
            write_decimal_u64(value, &mut out);
            out.push(b' ');
            write_hex_u64(value, &mut out);
            proptest::prop_assert_eq!(String::from_utf8(out).unwrap(), format!("{value} {value:x}"));
        }
    }

    #[test]
    fn two_words_wide() {
        assert_eq!(std::mem::size_of::<Variant>(), 16);
    }

    #[test]
    fn parses_every_type() {
        assert_eq!(Variant::parse(AttrType::Int, "-42"), Ok(Variant::Int(-42)));
        assert_eq!(Variant::parse(AttrType::Uint, "18446744073709551615"), Ok(Variant::Uint(u64::MAX)));
        assert_eq!(Variant::parse(AttrType::Double, "5.818e-06"), Ok(Variant::Double(5.818e-06)));
        assert_eq!(Variant::parse(AttrType::Bool, "true"), Ok(Variant::Bool(true)));
        assert_eq!(Variant::parse(AttrType::Bool, "F"), Ok(Variant::Bool(false)));
        assert_eq!(Variant::parse(AttrType::Bool, "2"), Ok(Variant::Bool(true)));
        assert_eq!(Variant::parse(AttrType::Type, "uint"), Ok(Variant::Type(AttrType::Uint)));
        assert_eq!(Variant::parse(AttrType::Addr, "7ffe12"), Ok(Variant::Addr(0x7ffe12)));
        assert_eq!(Variant::parse(AttrType::Ptr, "ff"), Ok(Variant::Ptr(255)));
        assert_eq!(Variant::parse(AttrType::Usr, "00ff"), Ok(Variant::Usr(Blob::new(&[0, 255]))));
        assert_eq!(Variant::parse(AttrType::Usr, "00:ff:"), Ok(Variant::Usr(Blob::new(&[0, 255]))));
        assert_eq!(Variant::parse(AttrType::String, ""), Ok(Variant::string("")));
        assert_eq!(Variant::parse(AttrType::Int, ""), Ok(Variant::Empty));
    }

    #[test]
    fn rejects_malformed_numbers() {
        for (ty, text) in [
            (AttrType::Int, "12x"),
            (AttrType::Int, "9223372036854775808"),
            (AttrType::Uint, "-1"),
            (AttrType::Uint, "+1"),
            (AttrType::Double, "1.2.3"),
            (AttrType::Bool, "yes"),
            (AttrType::Type, "float"),
            (AttrType::Addr, "xyz"),
        ] {
            let err = Variant::parse(ty, text).unwrap_err();
            assert_eq!(err.expected, ty);
            assert_eq!(err.text, text);
        }
        assert_eq!(Variant::parse(AttrType::Usr, "zz"), Ok(Variant::Empty));
    }

    #[test]
    fn cali_text_round_trips() {
        let values = [
            Variant::Int(-7),
            Variant::Uint(42),
            Variant::Double(0.1),
            Variant::Double(-1e-300),
            Variant::Bool(false),
            Variant::Type(AttrType::Double),
            Variant::Addr(0xdeadbeef),
            Variant::Ptr(0x1000),
            Variant::Usr(Blob::new(b"\x00\x01zz")),
            Variant::string("a=b,c\\d"),
        ];
        for v in values {
            let text = v.to_cali_string();
            assert_eq!(Variant::parse(v.attr_type(), &text), Ok(v.clone()), "{text}");
        }
    }

    #[test]
    fn display_matches_report_text() {
        assert_eq!(Variant::Double(0.000119).to_string(), "0.000119");
        assert_eq!(Variant::Double(42.0).to_string(), "42.000000");
        assert_eq!(Variant::Addr(255).to_string(), "ff");
        assert_eq!(Variant::Usr(Blob::new(&[1, 171])).to_string(), "01:ab:");
        assert_eq!(Variant::Type(AttrType::String).to_string(), "string");
        assert_eq!(Variant::Empty.to_string(), "");
    }

    #[test]
    fn ordering_is_by_type_then_value() {
        assert!(Variant::Int(100) < Variant::Uint(1), "int sorts before uint");
        assert!(Variant::string("abc") < Variant::string("abd"));
        assert!(Variant::string("ab") < Variant::string("abc"));
        assert!(Variant::Double(-1.0) < Variant::Double(0.5));
        assert!(Variant::Bool(false) < Variant::Bool(true));
        assert!(Variant::Empty < Variant::Int(i64::MIN));
        assert_eq!(Variant::Double(f64::NAN), Variant::Double(f64::NAN));
    }

    #[test]
    fn arithmetic_for_aggregation() {
        let mut acc = Variant::Empty;
        acc.add_assign(&Variant::Uint(5));
        acc.add_assign(&Variant::Uint(7));
        assert_eq!(acc, Variant::Uint(12));
        acc.add_assign(&Variant::Double(2.9));
        assert_eq!(acc, Variant::Uint(14), "rhs converted to the lhs type");
        let mut d = Variant::Double(0.5);
        d.add_assign(&Variant::Int(2));
        assert_eq!(d, Variant::Double(2.5));
        let mut s = Variant::string("x");
        s.add_assign(&Variant::Int(1));
        assert_eq!(s, Variant::string("x"));

        assert_eq!(Variant::Int(3).min_with(&Variant::Int(-2)), Variant::Int(-2));
        assert_eq!(Variant::Int(3).max_with(&Variant::Double(3.5)), Variant::Double(3.5));
        assert_eq!(Variant::Empty.min_with(&Variant::Uint(9)), Variant::Uint(9));
        assert_eq!(Variant::Uint(9).max_with(&Variant::Empty), Variant::Uint(9));
        assert_eq!(Variant::Int(-1).max_with(&Variant::Uint(u64::MAX)), Variant::Uint(u64::MAX));

        assert_eq!(Variant::Uint(7).div(2), Variant::Uint(3));
        assert_eq!(Variant::Int(-7).div(2), Variant::Int(-3));
        assert_eq!(Variant::Double(7.0).div(2), Variant::Double(3.5));
        assert_eq!(Variant::Double(7.0).div(0), Variant::Empty);
    }

    #[test]
    fn conversions() {
        assert_eq!(Variant::from(3_i32), Variant::Int(3));
        assert_eq!(Variant::from(3_usize), Variant::Uint(3));
        assert_eq!(Variant::from("s").as_str(), Some("s"));
        assert_eq!(Variant::Uint(3).to_f64(), Some(3.0));
        assert_eq!(Variant::Double(3.9).to_i64(), Some(3));
        assert_eq!(Variant::string("12").to_u64(), Some(12));
        assert_eq!(Variant::Int(0).to_bool(), Some(false));
        assert_eq!(Variant::Empty.to_f64(), None);
    }
}
