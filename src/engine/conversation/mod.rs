//! The conversation core: what an input does to a conversation, as plain
//! functions of its record that do no I/O. Each returns the record as it
//! must become and what must happen once that is on disk, or a typed
//! refusal; the actor (`super::actor`) writes the record, then runs the
//! rest, in that order. So the rules are testable without tokio, a store or
//! a channel.
//!
//! - [`step`]: what every function here returns: a [`Step`], the record to
//!   write and the [`Effect`]s to run after;
//! - [`transition`]: an event checked against the state machine's table,
//!   and everything a change of state brings (timers, budgets, the report);
//! - [`operator`]: pause, resume, cancel and `relay answer`;
//! - [`contact_wrote`]: a contact's message that asks something of the agent;
//! - [`follow_up_due`]: the heartbeat firing; [`budget_ran_out`]: a limit;
//! - [`awaiting_delivery`], [`message_status`], [`delivery_overdue`]: what
//!   became of a message relay sent;
//! - [`todo_marked`]: a checked `mark_todo_item` on its todo.
//!
//! Rules already plain functions of the record live beside it in the
//! engine: [`super::heartbeat`] (timers), [`super::budget`] (limits),
//! [`super::report`] (how a conversation ends), [`super::evidence`] (what
//! an answer rests on); the tools' own rules are in the actor's `tools`.

mod contact;
mod delivery;
mod follow_up;
pub mod operator;
mod step;
mod todo;
mod transition;

pub use contact::{ContactMessage, contact_wrote};
pub use delivery::{awaiting_delivery, delivery_overdue, message_status};
pub use follow_up::{budget_ran_out, follow_up_due};
pub use step::{Durability, Effect, Step};
pub use todo::{Mark, todo_marked};
pub(in crate::engine) use transition::entry;
pub use transition::transition;
