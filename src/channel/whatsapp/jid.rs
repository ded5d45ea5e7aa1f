//! Contacts (E.164) and WhatsApp addresses (JIDs). relay stores and routes
//! by phone number; WhatsApp addresses people by phone-number JIDs
//! (`56912345678@s.whatsapp.net`) or, more and more, by opaque LIDs
//! (`123456789@lid`) that only map to a number through the session.

use whatsapp_rust::Jid;

use crate::contact::Contact;

/// The phone-number JID WhatsApp delivers to for `contact`.
pub fn jid_of(contact: &Contact) -> Jid {
    Jid::pn(contact.as_str().trim_start_matches('+'))
}

/// The contact a phone-number JID belongs to (any device of it); `None`
/// for LIDs, groups and anything that is not a possible number.
pub fn contact_of(jid: &Jid) -> Option<Contact> {
    if !jid.is_pn() {
        return None;
    }
    digits_to_contact(jid.user_base())
}

/// "56912345678" (as WhatsApp's LID↔number map stores it) as a contact.
pub fn digits_to_contact(digits: &str) -> Option<Contact> {
    let digits = digits.trim_start_matches('+');
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Contact::parse(&format!("+{digits}")).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_contact_and_its_jid_map_both_ways() {
        let contact = Contact::parse("+56 9 1234 5678").unwrap();
        let jid = jid_of(&contact);
        assert_eq!(jid.to_string(), "56912345678@s.whatsapp.net");
        assert_eq!(contact_of(&jid), Some(contact));
    }

    #[test]
    fn any_device_of_a_number_is_that_contact() {
        let jid: Jid = "56912345678:12@s.whatsapp.net".parse().unwrap();
        assert_eq!(contact_of(&jid).unwrap().as_str(), "+56912345678");
    }

    #[test]
    fn lids_groups_and_garbage_are_not_contacts() {
        assert_eq!(contact_of(&Jid::lid("123456789012345")), None);
        assert_eq!(contact_of(&"120363025246125888@g.us".parse().unwrap()), None);
        assert_eq!(digits_to_contact("12ab"), None);
        assert_eq!(digits_to_contact(""), None);
        assert_eq!(digits_to_contact("56912345678").unwrap().as_str(), "+56912345678");
    }
}
