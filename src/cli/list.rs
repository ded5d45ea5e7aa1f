//! `relay list`: the conversations, newest first, a page at a time, as a
//! table.

use comfy_table::{Table, presets::NOTHING};

use super::output::{complain, say};
use super::{CliError, Context, output};
use crate::api::{ListQuery, State, TodoStatus};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only conversations in these states, comma-separated (e.g.
    /// WAITING_FOR_REPLY,paused), or `terminal` for the ended ones.
    #[arg(long, value_parser = states)]
    pub state: Option<String>,
    /// Only conversations with this contact.
    #[arg(long)]
    pub contact: Option<String>,
    /// How many a page shows (1 to 1000).
    #[arg(long, default_value_t = crate::api::paging::DEFAULT_LIMIT as u64, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub limit: u64,
    /// Start after the page that gave this cursor.
    #[arg(long, conflicts_with = "all")]
    pub cursor: Option<String>,
    /// Every page, not only the first.
    #[arg(long)]
    pub all: bool,
    /// With --json: the page as one object, {"conversations": [...],
    /// "next_cursor": "...", "remaining": N} (as MCP's list_conversations
    /// answers), for a program to page with --cursor.
    #[arg(long)]
    pub with_cursor: bool,
}

/// The page for a program: with `--with-cursor` one object that says where
/// the next page starts; else the bare array (the seeds' shape), and the
/// hint for a person on stderr.
fn page_as_json(
    conversations: Vec<crate::api::ConversationInstance>,
    more: Option<(usize, crate::api::paging::Cursor)>,
    with_cursor: bool,
    hint: Option<String>,
) {
    if with_cursor {
        let (remaining, next_cursor) = more.map_or((0, None), |(remaining, next)| (remaining, Some(next.to_string())));
        output::json(&crate::mcp::Conversations { conversations, next_cursor, remaining });
        return;
    }
    output::json(&conversations);
    if let Some(hint) = hint {
        complain!("{hint}; --with-cursor puts the cursor in the JSON");
    }
}

/// `--state` as the daemon reads it, checked before anything is asked.
fn states(text: &str) -> Result<String, String> {
    State::parse_list(text).map(|_| text.to_string())
}

pub async fn run(ctx: &Context, args: Args) -> Result<(), CliError> {
    let contact = match &args.contact {
        Some(contact) => {
            Some(crate::contact::Contact::parse(contact).map_err(|e| CliError::usage(e.to_string()))?.to_string())
        }
        None => None,
    };
    output::json_only(ctx, "--with-cursor", args.with_cursor)?;
    let query = ListQuery { state: args.state, contact, limit: Some(args.limit as usize), cursor: args.cursor.clone() };
    let client = ctx.client()?;
    let (instances, more) = match args.all {
        true => (client.list_all(&query).await?, None),
        false => {
            let page = client.list(&query).await?;
            (page.items, page.next.map(|next| (page.remaining, next)))
        }
    };
    // The filters as typed: the next page's command repeats them (or the
    // cursor would walk another list), and an empty page names them.
    let filters: Vec<String> = [("--state", &query.state), ("--contact", &query.contact)]
        .into_iter()
        .filter_map(|(flag, value)| value.as_ref().map(|v| format!(" {flag} {v}")))
        .collect();
    // Where the next page starts: below the table, or on stderr beside JSON.
    let hint = more.map(|(remaining, next)| {
        let mut again = format!("relay list{}", filters.concat());
        if args.limit != crate::api::paging::DEFAULT_LIMIT as u64 {
            again.push_str(&format!(" --limit {}", args.limit));
        }
        let more = output::count(remaining as u64, "more conversation");
        format!("{more}; use `{again} --cursor {next}` for the next page, or --all")
    });
    if ctx.json {
        page_as_json(instances, more, args.with_cursor, hint);
        return Ok(());
    }
    if instances.is_empty() {
        // "Yet" only when nothing narrowed the list: a filter or a cursor
        // that matches nothing says so, not that relay holds nothing.
        match (filters.is_empty(), &args.cursor) {
            (false, _) => say!("No conversations match{}.", filters.concat()),
            (true, Some(_)) => say!("No conversations after that cursor."),
            (true, None) => say!("No conversations yet. Start one with `relay create`."),
        }
        return Ok(());
    }
    let mut table = Table::new();
    table.load_preset(NOTHING).set_header(["ID", "STATE", "CONTACT", "TODOS", "UPDATED", "OBJECTIVE"]);
    for i in &instances {
        let done = i.todos.iter().filter(|t| matches!(t.status, TodoStatus::Completed | TodoStatus::Skipped)).count();
        table.add_row([
            output::short_id(&i.id),
            i.state.to_string(),
            i.target_contact.clone(),
            format!("{done}/{}", i.todos.len()),
            output::time(i.updated_at),
            output::truncate(&i.objective, 48),
        ]);
    }
    say!("{table}");
    if let Some(hint) = hint {
        say!("{hint}");
    }
    Ok(())
}
