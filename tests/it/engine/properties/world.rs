//! The scripted agent, and the policy of the fake channel, a case runs against.

use super::*;
use relay::channel::Blocked;

/// The agent's and the channel's scripts, walked per contact (each contact's
/// turns and sends happen in an order the engine fixes, whatever the other
/// contacts do).
pub(super) struct Script {
    pub(super) acts: Vec<Act>,
    pub(super) sends: Vec<SendOutcome>,
    pub(super) cursors: Mutex<[(usize, usize); CONTACTS.len()]>,
    pub(super) counter: AtomicU64,
}

impl Script {
    pub(super) fn new(input: &Input) -> Script {
        Script {
            acts: input.acts.clone(),
            sends: input.sends.clone(),
            // Each contact starts elsewhere in the scripts, so contacts differ.
            cursors: Mutex::new(std::array::from_fn(|c| (c * 5, c * 3))),
            counter: AtomicU64::new(0),
        }
    }

    pub(super) fn act(&self, contact: usize) -> Act {
        let mut cursors = self.cursors.lock().unwrap();
        let n = cursors[contact].0;
        cursors[contact].0 += 1;
        self.acts[n % self.acts.len()]
    }

    pub(super) fn send(&self, contact: usize) -> SendOutcome {
        let mut cursors = self.cursors.lock().unwrap();
        let n = cursors[contact].1;
        cursors[contact].1 += 1;
        self.sends[n % self.sends.len()]
    }

    /// A text no other message has: what was delivered twice is then visible.
    pub(super) fn text(&self, who: &str) -> String {
        format!("{who} {}", self.counter.fetch_add(1, Ordering::Relaxed))
    }
}

pub(super) fn contact_index(contact: &str) -> usize {
    CONTACTS.iter().position(|c| *c == contact).expect("one of the test contacts")
}

pub(super) fn contact(index: usize) -> Contact {
    Contact::parse(CONTACTS[index]).unwrap()
}

/// A channel that follows the script.
pub(super) fn channel(script: Arc<Script>) -> FakeChannel {
    FakeChannel::new(move |to, _text| {
        let outcome = script.send(contact_index(to.as_str()));
        let script = script.clone();
        Box::pin(async move {
            let reason = |r: &str| r.to_string();
            match outcome {
                SendOutcome::Ok | SendOutcome::Slow(_) => {
                    if let SendOutcome::Slow(ms) = outcome {
                        tokio::time::sleep(Duration::from_millis(ms)).await;
                    }
                    let id = format!("wa-{}", script.counter.fetch_add(1, Ordering::Relaxed));
                    Ok(Sent { message_id: Some(id) })
                }
                SendOutcome::Rejected => Err(ChannelError::Rejected { channel: "fake", reason: reason("not allowed") }),
                SendOutcome::Failed => {
                    Err(ChannelError::Failed { channel: "fake", reason: reason("not sent after 3 attempts") })
                }
                SendOutcome::Unavailable => Err(ChannelError::Unavailable {
                    channel: "fake",
                    reason: Blocked::LoggedOut { reason: reason("401") },
                }),
            }
        })
    })
}

/// An agent that does, each turn, what the script says next for its contact.
pub(super) fn agent(script: Arc<Script>) -> Arc<TestAgent> {
    Arc::new(TestAgent::new(move |turn, tools| {
        let script = script.clone();
        Box::pin(async move {
            let act = script.act(contact_index(&turn.instance.target_contact));
            let send = || ToolCall::SendMessage { text: script.text("agent") };
            // Refused tool calls are part of the game: the engine says why, the agent goes on.
            match act {
                Act::Send => drop(tools.call(send()).await),
                Act::SendThenWait(ms) => {
                    drop(tools.call(send()).await);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                }
                Act::MarkTodo => {
                    let call = ToolCall::MarkTodoItem {
                        todo_id: "1".into(),
                        status: TodoStatus::Completed,
                        answer: Some("done".into()),
                        value: None,
                        quote: None,
                        media: None,
                    };
                    drop(tools.call(call).await);
                }
                Act::Schedule(s) => {
                    drop(tools.call(ToolCall::ScheduleNextHeartbeat { delay: Duration::from_secs(s) }).await);
                    drop(tools.call(send()).await);
                }
                Act::End => drop(
                    tools
                        .call(ToolCall::EndConversation {
                            reason: "objective met".into(),
                            outcome: Some(Outcome::Achieved),
                            summary: None,
                        })
                        .await,
                ),
                Act::Human => {
                    let call = ToolCall::RequestHumanIntervention { reason: "needs a person".into(), question: None };
                    drop(tools.call(call).await);
                }
                Act::Fail => return Err(AgentError::Model("scripted failure".into())),
                Act::Nothing => {}
            }
            Ok(())
        })
    }))
}
