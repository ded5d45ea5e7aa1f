//! `send_attachment`: one of the conversation's attachments to its contact,
//! by the id relay listed in the prompt.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::agent::ToolCall;
use crate::api::limits;

/// Send the contact one of this conversation's attachments (the files
/// listed under "Attachments you can send"), by its id. Photos arrive as
/// images, other files as documents.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The attachment's id as listed, e.g. "a1".
    #[schemars(length(min = 2, max = 12))]
    pub attachment_id: String,
    /// A few words under the file, if any, in the contact's language.
    #[serde(default)]
    #[schemars(length(min = 1, max = limits::MAX_CAPTION_CHARS))]
    pub caption: Option<String>,
}

impl Tool for Args {
    fn into_call(self) -> Result<ToolCall, String> {
        Ok(ToolCall::SendAttachment { attachment_id: self.attachment_id, caption: self.caption })
    }
}
