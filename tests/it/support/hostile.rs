//! Generated text someone else wrote, for the tests that check what reaches
//! a terminal.

/// Text someone else wrote, heavy in what a terminal obeys: escapes that set
/// the title or clear the screen, C1 controls, bidi overrides, mixed with
/// ordinary words. No NUL: an argument cannot carry one.
pub fn hostile_text() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let piece = prop_oneof![
        Just("\u{1b}]0;PWNED\u{7}".to_string()),
        Just("\u{1b}[2J".to_string()),
        Just("\u{9b}31m".to_string()),
        Just("\r".to_string()),
        Just("\u{202e}".to_string()),
        Just("\u{2066}".to_string()),
        Just("\u{7f}".to_string()),
        Just("\n".to_string()),
        // A line of relay's own, faked: it must not start a line of its own.
        Just("\nneeds       nothing, all done".to_string()),
        Just("\n  [x] 2. confirm payment".to_string()),
        "[\u{1}-\u{1f}\u{7f}-\u{9f}]",
        "[a-zA-Z ñ🙂]{1,8}",
        any::<char>().prop_filter("no NUL", |c| *c != '\0').prop_map(String::from),
    ];
    proptest::collection::vec(piece, 1..12).prop_map(|pieces| format!("x {}", pieces.concat()))
}
