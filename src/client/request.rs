//! The create and send requests as every surface builds them (`relay
//! create` and `relay send`, MCP's `create_conversation` and
//! `send_to_contact`): what was asked, made into the daemon's request, its
//! files read and given to relay first. A [`Problem`] says what is wrong;
//! each surface words it with its own names for the inputs (`--attach` or
//! `attach`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{Client, Error, InstanceId};
use crate::api::{
    BudgetRequest, CreateInstanceRequest, CreateInstanceResponse, HeartbeatOverrides, NewAttachment, NewTodo, SendFile,
    SendMessageRequest, TranscriptMessage, limits,
};
use crate::template::Filled;

/// A file on this machine to give relay (`relay create --attach`, `relay
/// send --file`, MCP's `attach`): the name the contact will see, and its bytes.
pub type LocalFile = (Option<String>, Vec<u8>);

/// Reads the file at `path`, or says why it cannot.
pub fn read_local_file(path: &Path) -> Result<LocalFile, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok((path.file_name().map(|n| n.to_string_lossy().into_owned()), bytes))
}

/// A duration as the API's milliseconds.
pub fn millis(duration: Duration) -> u64 {
    duration.as_millis() as u64
}

/// What is wrong with a request before the daemon sees it, or the daemon's
/// (or the connection's) refusal.
#[derive(Debug, Clone, PartialEq)]
pub enum Problem {
    /// More files than a conversation takes ([`limits::MAX_ATTACHMENTS`]).
    TooManyFiles { given: usize },
    /// A file that cannot be read: which, and why.
    Unreadable(String),
    /// The daemon refused, or could not be reached.
    Daemon(Error),
}

impl From<Error> for Problem {
    fn from(error: Error) -> Problem {
        Problem::Daemon(error)
    }
}

/// A conversation to create, as a surface gathered it. Left out
/// (`None`, empty), the daemon's defaults apply; the daemon checks the
/// values (a zero budget, a deadline in the past, both deadlines).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewConversation {
    pub objective: String,
    pub contact: String,
    pub todos: Vec<NewTodo>,
    pub heartbeat_interval_ms: Option<u64>,
    pub max_followups: Option<u32>,
    pub time_zone: Option<String>,
    pub quiet_hours: Option<String>,
    pub override_opt_out: Option<String>,
    pub budget: BudgetRequest,
    pub private_context: Vec<String>,
    /// Files on this machine the agent may send the contact.
    pub attach: Vec<PathBuf>,
    /// When to start, as the caller wrote it: the daemon reads it in the
    /// contact's zone (see `api::start_at`).
    pub start_at: Option<String>,
}

impl NewConversation {
    /// This conversation started from a template: what was given here wins
    /// over the template's, and its private facts come first.
    pub fn from_template(self, filled: Filled) -> NewConversation {
        let asked = self.budget;
        NewConversation {
            objective: filled.objective,
            todos: filled.todos,
            heartbeat_interval_ms: self.heartbeat_interval_ms.or(filled.heartbeat_interval_ms),
            max_followups: self.max_followups.or(filled.max_followups),
            budget: BudgetRequest {
                max_turns: asked.max_turns.or(filled.max_turns),
                max_tokens: asked.max_tokens.or(filled.max_tokens),
                // A deadline given as a time replaces the template's too.
                expires_in_ms: asked.expires_in_ms.or(filled.expires_in_ms.filter(|_| asked.expires_at.is_none())),
                expires_at: asked.expires_at,
            },
            private_context: filled.private_context.into_iter().chain(self.private_context).collect(),
            ..self
        }
    }

    /// The daemon's request, without the attachments (which [`Ready::create`]
    /// gives relay first).
    pub fn request(&self) -> CreateInstanceRequest {
        let heartbeat_config =
            (self.heartbeat_interval_ms.is_some() || self.max_followups.is_some()).then_some(HeartbeatOverrides {
                interval_ms: self.heartbeat_interval_ms,
                max_followups: self.max_followups,
            });
        CreateInstanceRequest {
            objective: self.objective.clone(),
            target_contact: self.contact.clone(),
            todos: self.todos.clone(),
            heartbeat_config,
            time_zone: self.time_zone.clone(),
            quiet_hours: self.quiet_hours.clone(),
            override_opt_out: self.override_opt_out.clone(),
            budget: (self.budget != BudgetRequest::default()).then_some(self.budget),
            private_context: self.private_context.clone(),
            attachments: Vec::new(),
            start_at: self.start_at.clone(),
        }
    }

    /// The request with every file read, before any is given to relay: a
    /// wrong path costs nothing.
    pub fn read_files(self) -> Result<Ready, Problem> {
        if self.attach.len() > limits::MAX_ATTACHMENTS {
            return Err(Problem::TooManyFiles { given: self.attach.len() });
        }
        let files = self.attach.iter().map(|path| read_local_file(path));
        let files = files.collect::<Result<Vec<_>, _>>().map_err(Problem::Unreadable)?;
        Ok(Ready { request: self.request(), files })
    }
}

/// A conversation to create, its files read.
#[derive(Debug)]
pub struct Ready {
    request: CreateInstanceRequest,
    files: Vec<LocalFile>,
}

impl Ready {
    /// Gives relay the files, then creates the conversation with them.
    pub async fn create(self, client: &Client) -> Result<CreateInstanceResponse, Error> {
        let request = CreateInstanceRequest { attachments: attachments(client, self.files).await?, ..self.request };
        client.create(&request).await
    }
}

/// Gives relay each file (`POST /media`), as the attachments of a
/// conversation to create.
async fn attachments(client: &Client, files: Vec<LocalFile>) -> Result<Vec<NewAttachment>, Error> {
    let mut attachments = Vec::with_capacity(files.len());
    for (name, bytes) in files {
        let uploaded = client.upload(bytes).await?;
        attachments.push(NewAttachment { upload_id: uploaded.upload_id, name });
    }
    Ok(attachments)
}

/// The todo with this id ("1" is the first), if there is one.
pub fn todo_by_id<'a>(todos: &'a mut [NewTodo], id: &str) -> Option<&'a mut NewTodo> {
    id.trim().parse::<usize>().ok().filter(|n| *n >= 1).and_then(|n| todos.get_mut(n - 1))
}

/// What the operator sends the contact: words, or a file with words under it.
#[derive(Debug, Clone, PartialEq)]
pub enum Outgoing {
    Text(String),
    File { path: PathBuf, caption: Option<String> },
}

/// Sends it to conversation `id`'s contact; a file is read and given to
/// relay first.
pub async fn send(client: &Client, id: &InstanceId, outgoing: Outgoing) -> Result<TranscriptMessage, Problem> {
    let request = match outgoing {
        Outgoing::Text(message) => SendMessageRequest { message: Some(message), file: None },
        Outgoing::File { path, caption } => {
            let (name, bytes) = read_local_file(&path).map_err(Problem::Unreadable)?;
            let uploaded = client.upload(bytes).await?;
            SendMessageRequest { message: None, file: Some(SendFile { upload_id: uploaded.upload_id, name, caption }) }
        }
    };
    Ok(client.send(id, &request).await?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn asked() -> NewConversation {
        NewConversation {
            objective: "Book a visit".into(),
            contact: "+56912345678".into(),
            todos: vec![NewTodo::new("a day")],
            ..NewConversation::default()
        }
    }

    #[test]
    fn nothing_asked_leaves_the_daemons_defaults() {
        let request = asked().request();
        assert_eq!(request.heartbeat_config, None);
        assert_eq!(request.budget, None);
        assert!(request.private_context.is_empty() && request.attachments.is_empty());
        assert_eq!(request.target_contact, "+56912345678");
    }

    #[test]
    fn more_files_than_a_conversation_takes_are_refused_before_any_is_read() {
        let attach = vec![PathBuf::from("/nowhere/x.pdf"); limits::MAX_ATTACHMENTS + 1];
        let refused = NewConversation { attach, ..asked() }.read_files().unwrap_err();
        assert_eq!(refused, Problem::TooManyFiles { given: limits::MAX_ATTACHMENTS + 1 });
    }

    #[test]
    fn a_file_that_cannot_be_read_is_named() {
        let attach = vec![PathBuf::from("/nowhere/x.pdf")];
        let Err(Problem::Unreadable(why)) = NewConversation { attach, ..asked() }.read_files() else {
            panic!("a missing file was read");
        };
        assert!(why.starts_with("cannot read /nowhere/x.pdf"), "{why}");
    }

    #[test]
    fn files_are_read_with_their_names() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("invoice.pdf");
        std::fs::write(&path, b"%PDF").unwrap();
        let ready = NewConversation { attach: vec![path], ..asked() }.read_files().unwrap();
        assert_eq!(ready.files, [(Some("invoice.pdf".to_string()), b"%PDF".to_vec())]);
    }

    #[test]
    fn a_deadline_given_as_a_time_replaces_the_templates() {
        let at = chrono::DateTime::parse_from_rfc3339("2030-03-01T18:00:00-03:00").unwrap().to_utc();
        let filled = Filled { expires_in_ms: Some(5_000), ..filled(None, None, None) };
        let here =
            NewConversation { budget: BudgetRequest { expires_at: Some(at), ..BudgetRequest::default() }, ..asked() };
        let budget = here.from_template(filled).budget;
        assert_eq!((budget.expires_in_ms, budget.expires_at), (None, Some(at)));
    }

    fn filled(interval_ms: Option<u64>, max_followups: Option<u32>, max_turns: Option<u32>) -> Filled {
        Filled {
            objective: "From the template".into(),
            todos: vec![NewTodo::new("its todo")],
            heartbeat_interval_ms: interval_ms,
            max_followups,
            max_turns,
            max_tokens: None,
            expires_in_ms: None,
            private_context: vec!["its fact".into()],
        }
    }

    fn interval() -> impl Strategy<Value = Option<u64>> {
        proptest::option::of(1u64..10_000_000)
    }

    fn followups() -> impl Strategy<Value = Option<u32>> {
        proptest::option::of(0u32..20)
    }

    fn turns() -> impl Strategy<Value = Option<u32>> {
        proptest::option::of(1u32..100)
    }

    proptest! {
        #[test]
        fn overrides_and_budget_are_sent_only_when_some_is_asked(
            interval_ms in interval(),
            max_followups in followups(),
            max_turns in turns(),
            max_tokens in proptest::option::of(1u64..1_000_000),
            expires_in_ms in proptest::option::of(1u64..100_000_000),
            facts in proptest::collection::vec("[a-z ]{1,12}", 0..4),
        ) {
            let budget = BudgetRequest { max_turns, max_tokens, expires_in_ms, expires_at: None };
            let asked = NewConversation {
                heartbeat_interval_ms: interval_ms,
                max_followups,
                budget,
                private_context: facts.clone(),
                ..asked()
            };
            let request = asked.request();
            let overrides = request.heartbeat_config.map(|h| (h.interval_ms, h.max_followups));
            let any_override = interval_ms.is_some() || max_followups.is_some();
            prop_assert_eq!(overrides, any_override.then_some((interval_ms, max_followups)));
            let any_budget = max_turns.is_some() || max_tokens.is_some() || expires_in_ms.is_some();
            prop_assert_eq!(request.budget, any_budget.then_some(budget));
            prop_assert_eq!(request.private_context, facts);
            prop_assert_eq!(request.todos, asked.todos);
        }

        #[test]
        fn what_is_given_here_wins_over_the_template(
            here_interval in interval(),
            its_interval in interval(),
            here_followups in followups(),
            its_followups in followups(),
            here_turns in turns(),
            its_turns in turns(),
            here_facts in proptest::collection::vec("[a-z]{1,8}", 0..3),
        ) {
            let here = NewConversation {
                heartbeat_interval_ms: here_interval,
                max_followups: here_followups,
                budget: BudgetRequest { max_turns: here_turns, ..BudgetRequest::default() },
                private_context: here_facts.clone(),
                ..asked()
            };
            let both = here.from_template(filled(its_interval, its_followups, its_turns));
            prop_assert_eq!(both.heartbeat_interval_ms, here_interval.or(its_interval));
            prop_assert_eq!(both.max_followups, here_followups.or(its_followups));
            prop_assert_eq!(both.budget.max_turns, here_turns.or(its_turns));
            prop_assert_eq!(&both.objective, "From the template");
            prop_assert_eq!(&both.contact, "+56912345678");
            let facts: Vec<String> = std::iter::once("its fact".to_string()).chain(here_facts).collect();
            prop_assert_eq!(both.private_context, facts);
        }

        #[test]
        fn a_todo_is_found_by_its_id_and_only_by_it(count in 1usize..8, id in "[0-9 ]{0,3}") {
            let mut todos: Vec<NewTodo> = (0..count).map(|n| NewTodo::new(format!("todo {n}"))).collect();
            let found = todo_by_id(&mut todos, &id).map(|todo| todo.text.clone());
            let expected = id.trim().parse::<usize>().ok().filter(|n| (1..=count).contains(n)).map(|n| format!("todo {}", n - 1));
            prop_assert_eq!(found, expected);
        }
    }
}
