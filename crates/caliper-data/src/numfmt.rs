//! Text forms of doubles.
//!
//! The reference writes doubles into `.cali` files with C++ stream defaults
//! (`%g` with 6 significant digits), which loses precision, and prints them
//! in reports with `%f`. We write the shortest text that reads back to the
//! same double, laid out as `%g` would lay it out with enough digits: where
//! six digits are enough this is exactly the reference's text (`5.818e-06`,
//! `0.00013452`, `42`), otherwise it has more digits (`3.14159265358979`).

use std::io::Write as _;

/// Appends the `.cali` text of `x` to `out`.
pub fn write_double_cali(x: f64, out: &mut Vec<u8>) {
    if !x.is_finite() {
        out.extend_from_slice(non_finite(x).as_bytes());
        return;
    }
    // Shortest round-trip digits in scientific form, e.g. "-1.2345e-7".
    let mut buf = [0u8; 40];
    let len = {
        let mut cursor = std::io::Cursor::new(&mut buf[..]);
        write!(cursor, "{x:e}").expect("a double fits in 40 bytes");
        cursor.position() as usize
    };
    let sci = &buf[..len];
    let (negative, sci) = match sci.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, sci),
    };
    let e_pos = sci.iter().position(|&b| b == b'e').expect("scientific form");
    let exponent: i32 = std::str::from_utf8(&sci[e_pos + 1..]).expect("ascii").parse().expect("exponent");
    let mut digits = [0u8; 24];
    let mut n_digits = 0;
    for &b in &sci[..e_pos] {
        if b.is_ascii_digit() {
            digits[n_digits] = b;
            n_digits += 1;
        }
    }
    let digits = &digits[..n_digits];
    let precision = n_digits.max(6) as i32;

    if negative {
        out.push(b'-');
    }
    if exponent < -4 || exponent >= precision {
        out.push(digits[0]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.push(b'e');
        out.push(if exponent < 0 { b'-' } else { b'+' });
        let magnitude = exponent.unsigned_abs();
        if magnitude < 10 {
            out.push(b'0');
        }
        write!(out, "{magnitude}").expect("write to Vec");
    } else if exponent >= 0 {
        let int_len = exponent as usize + 1;
        if digits.len() <= int_len {
            out.extend_from_slice(digits);
            out.extend(std::iter::repeat_n(b'0', int_len - digits.len()));
        } else {
            out.extend_from_slice(&digits[..int_len]);
            out.push(b'.');
            out.extend_from_slice(&digits[int_len..]);
        }
    } else {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', (-exponent - 1) as usize));
        out.extend_from_slice(digits);
    }
}

/// The `.cali` text of `x` as a string.
pub fn double_cali_string(x: f64) -> String {
    let mut out = Vec::new();
    write_double_cali(x, &mut out);
    String::from_utf8(out).expect("ascii")
}

/// The report text of `x`: C's `%f` (six digits after the point).
pub fn double_fixed_string(x: f64) -> String {
    if x.is_finite() { format!("{x:.6}") } else { non_finite(x).to_string() }
}

fn non_finite(x: f64) -> &'static str {
    if x.is_nan() {
        "nan"
    } else if x > 0.0 {
        "inf"
    } else {
        "-inf"
    }
}

/// Parses a double the way the reference's `strtod`-based reader accepts
/// the text its writer produces: decimal or scientific notation, `inf`,
/// `infinity` and `nan` in any case, with an optional sign.
pub fn parse_double(text: &str) -> Option<f64> {
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    if unsigned.eq_ignore_ascii_case("nan") {
        return Some(if text.starts_with('-') { -f64::NAN } else { f64::NAN });
    }
    text.parse::<f64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn six_digit_values_print_like_the_reference() {
        for text in [
            "5.818e-06",
            "0.00013452",
            "3.074e-06",
            "1.1728e-05",
            "0.301407",
            "42",
            "100",
            "1e+06",
            "1e-05",
            "1.23457e+08",
            "0",
            "-0",
            "-2.5",
            "0.0001",
            "123456",
            "1e+300",
        ] {
            let x: f64 = text.parse().unwrap();
            assert_eq!(double_cali_string(x), text, "for {x:?}");
        }
    }

    #[test]
    fn more_digits_are_kept_when_needed() {
        assert_eq!(double_cali_string(std::f64::consts::PI), "3.141592653589793");
        assert_eq!(double_cali_string(1.23456789012345), "1.23456789012345");
        assert_eq!(double_cali_string(1234567.0), "1234567");
        assert_eq!(double_cali_string(123456789.0), "123456789");
        assert_eq!(double_cali_string(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(double_cali_string(5e-324), "5e-324");
        assert_eq!(double_cali_string(f64::MAX), "1.7976931348623157e+308");
    }

    #[test]
    fn round_trips_exactly() {
        let mut x = 1.0e-310_f64;
        while x < 1e300 {
            for v in [x, -x, x * 1.000_000_1, x / 3.0] {
                let text = double_cali_string(v);
                assert_eq!(parse_double(&text), Some(v), "{text}");
            }
            x *= 7.3;
        }
    }

    #[test]
    fn non_finite_values() {
        assert_eq!(double_cali_string(f64::INFINITY), "inf");
        assert_eq!(double_cali_string(f64::NEG_INFINITY), "-inf");
        assert_eq!(double_cali_string(f64::NAN), "nan");
        assert_eq!(parse_double("inf"), Some(f64::INFINITY));
        assert_eq!(parse_double("-Infinity"), Some(f64::NEG_INFINITY));
        assert!(parse_double("nan").unwrap().is_nan());
        assert!(parse_double("-nan").unwrap().is_nan());
        assert_eq!(parse_double("1.5x"), None);
        assert_eq!(parse_double(""), None);
    }

    #[test]
    fn fixed_format_is_percent_f() {
        assert_eq!(double_fixed_string(0.000119), "0.000119");
        assert_eq!(double_fixed_string(42.0), "42.000000");
        assert_eq!(double_fixed_string(-1.5), "-1.500000");
        assert_eq!(double_fixed_string(f64::INFINITY), "inf");
    }
}
