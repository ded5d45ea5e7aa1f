use proptest::prelude::*;

use super::*;
use crate::api::{HeartbeatConfig, TodoItem};

fn todo(id: &str, status: TodoStatus, answer: Option<&str>) -> TodoItem {
    TodoItem {
        id: id.into(),
        text: format!("todo {id}"),
        status,
        answer: answer.map(str::to_string),
        answer_message_ids: answer.map(|_| vec![Uuid::new_v4()]).unwrap_or_default(),
        answer_schema: None,
        value: None,
        evidence: Vec::new(),
        check: None,
    }
}

fn record(todos: Vec<TodoItem>) -> ConversationRecord {
    ConversationRecord::new("o".into(), "+56912345678".into(), todos, HeartbeatConfig::default())
}

fn mark(todo_id: &str, status: TodoStatus) -> Mark {
    Mark {
        todo_id: todo_id.into(),
        status,
        answer: None,
        value: None,
        check: None,
        evidence: Vec::new(),
        answered_ids: Vec::new(),
    }
}

fn evidence(words: &str) -> Evidence {
    Evidence { message_id: Uuid::new_v4(), untrusted_contact_text: words.into(), media: None, changed: None }
}

#[test]
fn a_skipped_todo_taken_up_again_has_no_answer_left() {
    let current = record(vec![todo("1", TodoStatus::Skipped, Some("they had no time"))]);
    let step = todo_marked(&current, mark("1", TodoStatus::Completed), Utc::now());
    let taken = &step.next.todos[0];
    assert_eq!((taken.status, taken.answer.as_deref()), (TodoStatus::Completed, None));
    assert!(taken.answer_message_ids.is_empty());
}

proptest! {
    /// A mark changes its own todo and no other; an answer or a value rests
    /// on its evidence, else on the messages the turn answers; what the
    /// mark leaves out stays; the todo's event says what it became.
    #[test]
    fn a_mark_changes_its_todo_as_it_says(
        answer in proptest::option::of("[a-z ]{1,12}"),
        value in proptest::option::of(any::<u8>()),
        words in proptest::option::of("[a-z ]{1,12}"),
        status in prop::sample::select(vec![TodoStatus::Pending, TodoStatus::Completed, TodoStatus::Skipped]),
        answered in 0usize..3,
    ) {
        let current = record(vec![todo("1", TodoStatus::Pending, Some("earlier")), todo("2", TodoStatus::Pending, None)]);
        let answered_ids: Vec<Uuid> = (0..answered).map(|_| Uuid::new_v4()).collect();
        let evidence: Vec<Evidence> = words.as_deref().map(evidence).into_iter().collect();
        let given = Mark {
            answer: answer.clone(),
            value: value.map(serde_json::Value::from),
            evidence: evidence.clone(),
            answered_ids: answered_ids.clone(),
            ..mark("1", status)
        };
        let step = todo_marked(&current, given, Utc::now());
        let (marked, other) = (&step.next.todos[0], &step.next.todos[1]);
        prop_assert_eq!(other, &current.todos[1]);
        prop_assert_eq!(marked.status, status);
        prop_assert_eq!(marked.answer.as_deref(), answer.as_deref().or(Some("earlier")));
        let rests_on = match (answer.is_some() || value.is_some(), evidence.is_empty()) {
            (false, _) => current.todos[0].answer_message_ids.clone(),
            (true, true) => answered_ids,
            (true, false) => evidence.iter().map(|e| e.message_id).collect(),
        };
        prop_assert_eq!(&marked.answer_message_ids, &rests_on);
        prop_assert_eq!(step.effects, vec![Effect::Publish(EventData::todo(marked))]);
    }
}
