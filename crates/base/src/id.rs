//! Random identifiers: lowercase UUID v4 text, and the UUID shape check that guards argv and file names.

/// A fresh lowercase UUID v4, 8-4-4-4-12 hex.
pub fn new_uuid_v4() -> String {
    let mut bytes: [u8; 16] = rand::random();
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32])
}

/// True for lowercase 8-4-4-4-12 hex, the only id shape that may reach a command line or a file name.
pub fn is_uuid(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, &b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_digit() || (b'a'..=b'f').contains(&b),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_ids_are_v4_and_distinct() {
        let a = new_uuid_v4();
        let b = new_uuid_v4();
        assert!(is_uuid(&a) && is_uuid(&b));
        assert_ne!(a, b);
        assert_eq!(&a[14..15], "4");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"));
    }

    #[test]
    fn shape_check_is_strict() {
        assert!(is_uuid("0b6f3c0e-6a51-4b8e-9a3e-2f7d1c4e5a90"));
        for bad in [
            "0B6F3C0E-6A51-4B8E-9A3E-2F7D1C4E5A90",
            "0b6f3c0e6a514b8e9a3e2f7d1c4e5a90",
            "",
            "0b6f3c0e-6a51-4b8e-9a3e-2f7d1c4e5a9",
            "0b6f3c0e-6a51-4b8e-9a3e-2f7d1c4e5a90\n",
            "0b6f3c0e-6a51-4b8e-9a3e_2f7d1c4e5a90",
        ] {
            assert!(!is_uuid(bad), "{bad:?}");
        }
    }
}
