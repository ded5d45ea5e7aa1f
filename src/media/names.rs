//! relay's names for the files it keeps. A name is always relay's own: a
//! message id or an attachment number, and an extension from the sniff
//! table. The name a contact gave a file is display metadata only
//! ([`display_name`]) and never becomes a path.

use uuid::Uuid;

use super::sniff::FileType;

/// The longest display name kept, in characters.
pub const MAX_DISPLAY_NAME_CHARS: usize = 100;

/// A contact's file: `<message-uuid>.<ext>`.
pub fn stored_file(message_id: Uuid, ty: FileType) -> String {
    format!("{message_id}.{}", ty.ext)
}

/// The id of the `n`th attachment of a conversation: `a1`, `a2`…
pub fn attachment_id(n: u32) -> String {
    format!("a{n}")
}

/// The number in an attachment id: `a3` is 3. Anything else (`a03`, `a0`,
/// `../a1`, `A1`) is none.
pub fn attachment_number(id: &str) -> Option<u32> {
    let digits = id.strip_prefix('a')?;
    let canonical = digits.bytes().all(|b| b.is_ascii_digit()) && !digits.starts_with('0');
    canonical.then(|| digits.parse().ok()).flatten()
}

/// The file of the `n`th attachment: `att-a<n>.<ext>`.
pub fn attachment_file(n: u32, ty: FileType) -> String {
    format!("att-{}.{}", attachment_id(n), ty.ext)
}

/// Characters that change how the text around them is shown (right-to-left
/// overrides can make `invoice\u{202E}fdp.exe` read as `invoice.exe.pdf`)
/// or are not seen at all.
pub(crate) fn invisible(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{061C}' | '\u{FEFF}')
}

/// A contact's name for a file, fit to show: without control or
/// direction-changing characters, `/` or `\`, with no `..` (a run of dots
/// becomes one), trimmed, and at most [`MAX_DISPLAY_NAME_CHARS`]
/// characters. `None` when nothing (or only a dot) is left.
pub fn display_name(given: &str) -> Option<String> {
    let mut name = String::with_capacity(given.len().min(4 * MAX_DISPLAY_NAME_CHARS));
    for c in given.chars() {
        if c.is_control() || invisible(c) || c == '/' || c == '\\' || (c == '.' && name.ends_with('.')) {
            continue;
        }
        name.push(c);
    }
    let cut: String = name.trim().chars().take(MAX_DISPLAY_NAME_CHARS).collect();
    let cut = cut.trim();
    (!cut.chars().all(|c| c == '.')).then(|| cut.to_string())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::media::sniff::{self, JPEG, OPUS, PDF};

    #[test]
    fn relay_names_its_files_by_message_and_sniffed_type() {
        let id: Uuid = "83bf0b6b-5c04-4c27-b174-8ba0ee4168f1".parse().unwrap();
        assert_eq!(stored_file(id, OPUS), "83bf0b6b-5c04-4c27-b174-8ba0ee4168f1.ogg");
        assert_eq!(stored_file(id, JPEG), "83bf0b6b-5c04-4c27-b174-8ba0ee4168f1.jpg");
        assert_eq!(stored_file(id, sniff::UNKNOWN), "83bf0b6b-5c04-4c27-b174-8ba0ee4168f1.bin");
        assert_eq!(attachment_file(1, PDF), "att-a1.pdf");
        assert_eq!(attachment_file(12, sniff::DOCX), "att-a12.docx");
    }

    #[test]
    fn only_canonical_attachment_ids_have_a_number() {
        assert_eq!(attachment_number("a1"), Some(1));
        assert_eq!(attachment_number(&attachment_id(42)), Some(42));
        for wrong in ["", "a", "a0", "a01", "A1", "1", "a-1", "a+1", "a1 ", "../a1", "a1/..", "a99999999999"] {
            assert_eq!(attachment_number(wrong), None, "{wrong:?}");
        }
    }

    #[test]
    fn a_contacts_file_name_is_cleaned_for_display() {
        assert_eq!(display_name("invoice.pdf").as_deref(), Some("invoice.pdf"));
        assert_eq!(display_name("  Factura marzo.pdf ").as_deref(), Some("Factura marzo.pdf"));
        assert_eq!(display_name("../../etc/passwd").as_deref(), Some(".etcpasswd"));
        assert_eq!(display_name("..\\..\\boot.ini").as_deref(), Some(".boot.ini"));
        assert_eq!(display_name("a\nb\r\u{0}c\u{7f}.txt").as_deref(), Some("abc.txt"));
        assert_eq!(display_name("invoice\u{202E}fdp.exe").as_deref(), Some("invoicefdp.exe"));
        assert_eq!(display_name("report....final.pdf").as_deref(), Some("report.final.pdf"));
        assert_eq!(display_name(".."), None);
        assert_eq!(display_name("./."), None);
        assert_eq!(display_name("/"), None);
        assert_eq!(display_name(" \u{200B} "), None);
        assert_eq!(display_name(""), None);
        let long = format!("{}.pdf", "ñ".repeat(300));
        assert_eq!(display_name(&long).unwrap().chars().count(), MAX_DISPLAY_NAME_CHARS);
    }

    proptest! {
        /// Whatever a contact names a file, the name shown has no path
        /// separator, no `..`, no control character and at most 100
        /// characters.
        #[test]
        fn no_file_name_yields_a_path(given in ".{0,300}", tricky in "[./\\\\a\\x00\\n\u{202E}]{0,40}") {
            for given in [given.clone(), tricky.clone(), format!("{tricky}{given}{tricky}")] {
                if let Some(name) = display_name(&given) {
                    prop_assert!(!name.contains('/') && !name.contains('\\'), "{name:?}");
                    prop_assert!(!name.contains(".."), "{name:?}");
                    prop_assert!(!name.chars().any(|c| c.is_control() || invisible(c)), "{name:?}");
                    prop_assert!(name.chars().count() <= MAX_DISPLAY_NAME_CHARS);
                    prop_assert!(!name.is_empty() && name.trim() == name);
                    prop_assert_eq!(std::path::Path::new(&name).components().count(), 1);
                }
            }
        }
    }
}
