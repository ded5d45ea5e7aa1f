//! `relay template add | list | show | remove`: conversations written once
//! with `{{placeholders}}`, started with `relay create --template NAME --var
//! key=value`. Templates are files in the home; no daemon is needed.

use comfy_table::Table;

use super::output::say;
use super::{CliError, Context, output};
use crate::api::ErrorCode;
use crate::client::request::millis;
use crate::template::{Template, TemplateError, Templates};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Save a template (objective and todos may hold {{placeholders}}).
    Add(AddArgs),
    /// List the templates and their variables.
    List,
    /// Show one template.
    Show { name: String },
    /// Delete a template.
    Remove { name: String },
}

#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// Lowercase letters, digits, '-' and '_' (e.g. delivery-check).
    pub name: String,
    /// What the conversation should achieve; may hold {{placeholders}}.
    #[arg(long)]
    pub objective: String,
    /// One thing to get done; repeat for several.
    #[arg(long = "todo", required = true)]
    pub todos: Vec<String>,
    /// What the answer to the --todo just before is (see `relay create --answer`).
    #[arg(long = "answer", value_name = "KIND", value_parser = super::create::parse_answer)]
    pub answers: Vec<crate::api::AnswerSchema>,
    /// Which todo each --answer is for: set by [`super::parse`].
    #[arg(skip)]
    pub answer_of: Vec<usize>,
    /// How long to wait for a reply before a follow-up (90s, 30m, 2h).
    #[arg(long, value_parser = super::create::parse_duration)]
    pub heartbeat_interval: Option<std::time::Duration>,
    /// Follow-ups before the conversation is ABANDONED.
    #[arg(long)]
    pub max_followups: Option<u32>,
    /// Agent turns at most per conversation (see `relay create --max-turns`).
    #[arg(long, value_name = "N", value_parser = super::create::parse_max_turns)]
    pub max_turns: Option<u32>,
    /// Model tokens at most per conversation (see `relay create --max-tokens`).
    #[arg(long, value_name = "N", value_parser = super::create::parse_max_tokens)]
    pub max_tokens: Option<u64>,
    /// Each conversation ends this long after it is created (3d, 12h).
    #[arg(long, value_name = "DURATION", value_parser = super::create::parse_expires_in, allow_hyphen_values = true)]
    pub expires_in: Option<std::time::Duration>,
    /// A fact relay's agent may use but must never write to the contact
    /// (see `relay create --private`); may hold {{placeholders}}. Repeat for several.
    #[arg(long = "private", value_name = "TEXT")]
    pub private_context: Vec<String>,
    /// Replace a template of the same name.
    #[arg(long)]
    pub force: bool,
}

pub fn run(ctx: &Context, command: Command) -> Result<(), CliError> {
    let templates = Templates::of(&ctx.home);
    match command {
        Command::Add(args) => add(ctx, &templates, args)?,
        Command::List => list(ctx, &templates)?,
        Command::Show { name } => show(ctx, &templates, &name)?,
        Command::Remove { name } => {
            templates.remove(&name).map_err(error)?;
            if ctx.json {
                output::json(&serde_json::json!({ "removed": name }));
            } else {
                say!("Removed template '{name}'.");
            }
        }
    }
    Ok(())
}

/// `relay template add`.
fn add(ctx: &Context, templates: &Templates, args: AddArgs) -> Result<(), CliError> {
    let mut template = Template::new(&args.name, args.objective, args.todos)
        .and_then(|t| t.with_private_context(args.private_context))
        .map_err(error)?;
    template.heartbeat_interval_ms = args.heartbeat_interval.map(millis);
    template.max_followups = args.max_followups;
    template.max_turns = args.max_turns;
    template.max_tokens = args.max_tokens;
    template.expires_in_ms = args.expires_in.map(millis);
    for (schema, n) in args.answers.into_iter().zip(args.answer_of) {
        template.answers.insert((n + 1).to_string(), schema);
    }
    templates.save(&template, args.force).map_err(error)?;
    if ctx.json {
        output::json(&template);
    } else {
        let variables = template.variables().into_iter().collect::<Vec<_>>().join(", ");
        let variables = if variables.is_empty() { "none".into() } else { variables };
        say!("Saved template '{}' (variables: {variables}).", template.name);
    }
    Ok(())
}

/// `relay template list`: a table of them.
fn list(ctx: &Context, templates: &Templates) -> Result<(), CliError> {
    let all = templates.list().map_err(error)?;
    if ctx.json {
        output::json(&all);
    } else if all.is_empty() {
        say!("No templates yet: `relay template add NAME --objective ... --todo ...`.");
    } else {
        let mut table = Table::new();
        table.load_preset(comfy_table::presets::NOTHING).set_header(["NAME", "VARIABLES", "TODOS", "OBJECTIVE"]);
        for t in &all {
            let variables = t.variables().into_iter().collect::<Vec<_>>().join(", ");
            table.add_row([t.name.clone(), variables, t.todos.len().to_string(), output::truncate(&t.objective, 50)]);
        }
        say!("{table}");
    }
    Ok(())
}

/// `relay template show`.
fn show(ctx: &Context, templates: &Templates, name: &str) -> Result<(), CliError> {
    let t = templates.load(name).map_err(error)?;
    if ctx.json {
        output::json(&t);
    } else {
        say!("name        {}", t.name);
        say!("objective   {}", output::hang(&t.objective, 12));
        let variables = t.variables().into_iter().collect::<Vec<_>>().join(", ");
        say!("variables   {}", if variables.is_empty() { "none" } else { &variables });
        if let Some(ms) = t.heartbeat_interval_ms {
            say!("heartbeat   every {}", crate::duration::format(std::time::Duration::from_millis(ms)));
        }
        if let Some(n) = t.max_followups {
            say!("follow-ups  at most {n}");
        }
        if let Some(n) = t.max_turns {
            say!("turns       at most {n}");
        }
        if let Some(n) = t.max_tokens {
            say!("tokens      at most {n}");
        }
        if let Some(ms) = t.expires_in_ms {
            say!("expires     {} after it starts", crate::duration::format(std::time::Duration::from_millis(ms)));
        }
        for fact in &t.private_context {
            say!("private     {}", output::hang(fact, 12));
        }
        say!("todos");
        for (n, todo) in t.todos.iter().enumerate() {
            say!("  {}. {}", n + 1, output::hang(todo, 5));
            if let Some(schema) = t.answers.get(&(n + 1).to_string()) {
                say!("     value: {}", schema.describe());
            }
        }
    }
    Ok(())
}

/// A template error as the CLI reports it: 4 for one that does not exist,
/// 2 for bad input, 1 for trouble with the files.
pub fn error(e: TemplateError) -> CliError {
    match e {
        TemplateError::NotFound(_) => CliError::new(ErrorCode::NotFound, e.to_string()),
        TemplateError::BadName(_) | TemplateError::Exists(_) | TemplateError::Invalid(_) => {
            CliError::usage(e.to_string())
        }
        TemplateError::Io { .. } | TemplateError::Corrupt { .. } => CliError::failure(e.to_string()),
    }
}
