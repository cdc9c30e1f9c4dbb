//! WGSL text helpers: identifiers from user names, Const names.

/// A WGSL identifier fragment from a user name (letters, digits, underscores).
pub fn ident(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    s.trim_matches('_').chars().take(24).collect()
}

/// Whether `name` can be a Const's name: a WGSL identifier not reserved by parloop.
pub fn is_valid_const_name(name: &str) -> bool {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    first_ok
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with("pl_")
        && name != "_"
        && !name.starts_with("__")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn const_names() {
        assert!(is_valid_const_name("gam"));
        assert!(is_valid_const_name("_x1"));
        assert!(!is_valid_const_name("pl_n"));
        assert!(!is_valid_const_name("1x"));
        assert!(!is_valid_const_name("a-b"));
    }
}
