//! What the client puts into a URL, checked first: a conversation's id (or
//! a prefix of one), a webhook's id, a contact's number. A wrong one is
//! refused before the daemon is looked for.

use super::Error;
use crate::api::ErrorCode;

/// A conversation id, or a prefix of one, checked: ids and prefixes are hex
/// and dashes, so anything else is refused before it is put into a URL (and
/// before the daemon is looked for: a wrong id is the caller's to fix first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceId(String);

impl InstanceId {
    pub fn parse(id: &str) -> Result<InstanceId, Error> {
        let id = id.trim();
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            return Err(Error::new(
                ErrorCode::InvalidArguments,
                format!("'{id}' is not a conversation id (ids look like 3f2a9c1e-...)"),
            ));
        }
        Ok(InstanceId(id.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `/instances/<id>`.
    pub(super) fn path(&self) -> String {
        format!("/instances/{}", self.0)
    }
}

/// Webhook ids are letters, digits and `_`.
pub(super) fn webhook_id(id: &str) -> Result<&str, Error> {
    let id = id.trim();
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(Error::new(
            ErrorCode::InvalidArguments,
            format!("'{id}' is not a webhook id (they look like wh_3f2a9c1e4b5d)"),
        ));
    }
    Ok(id)
}

/// A phone number, checked and in E.164 (`+` and digits: safe in a path)
/// before it is put into a URL, as the daemon would check it.
pub(super) fn number(contact: &str) -> Result<String, Error> {
    crate::contact::Contact::parse(contact)
        .map(|c| c.as_str().to_string())
        .map_err(|e| Error::new(ErrorCode::InvalidArguments, e.to_string()))
}
