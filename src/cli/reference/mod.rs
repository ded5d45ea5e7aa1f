//! The command reference: each command's details and examples (`pages.rs`),
//! attached to the clap definitions so that `relay COMMAND --help` shows
//! them, and docs/cli.md rendered from the same definitions (`markdown`).
//! A test in tests/it/repo/docs.rs keeps docs/cli.md in step with this build;
//! the tests below parse every example with clap.

mod pages;
mod sandbox_pages;

use clap::{Arg, Command, CommandFactory};

use pages::Page;

/// relay's command line: the clap definitions, with each command's details
/// (its `long_about`, after the one-line `about`) and examples (its
/// `after_long_help`) from `pages.rs`. `relay COMMAND --help` shows them;
/// `-h` shows the one-line summaries only.
pub fn command() -> Command {
    pages::all().fold(super::Cli::command(), |root, page| {
        let path: Vec<&str> = page.path.split_whitespace().collect();
        attach(root, &path, page)
    })
}

fn attach(command: Command, path: &[&str], page: &Page) -> Command {
    match path {
        [] => with_page(command, page),
        [name, rest @ ..] => command.mut_subcommand(*name, |sub| attach(sub, rest, page)),
    }
}

fn with_page(mut command: Command, page: &Page) -> Command {
    if !page.details.is_empty() {
        let about = long_about(&command);
        command = command.long_about(format!("{about}\n\n{}", page.details.trim()));
    }
    if !page.examples.is_empty() {
        let mut text = String::from("Examples:");
        for (what, line) in page.examples {
            text.push_str(&format!("\n  # {what}\n  {line}"));
        }
        command = command.after_long_help(text);
    }
    command
}

/// docs/cli.md: every command, from the clap definitions, with its usage,
/// what it does, each argument (its help, default, environment variable and
/// choices), its subcommands and its examples.
pub fn markdown() -> String {
    let mut root = command();
    root.build();
    let mut out = String::from(
        "# relay's commands\n\n\
         <!-- Generated from the clap definitions in src/cli/ (details and examples: \
         src/cli/reference/pages.rs). Do not edit: `RELAY_REFRESH_DOCS=1 cargo test --test it docs::` \
         rewrites this file. -->\n\n\
         Every command, as `relay COMMAND --help` shows it. This page is generated from relay's own \
         argument definitions, and a test parses every example on it, so it says what this build \
         takes. How to read ids, phone numbers, durations and limits, the environment variables and \
         what each exit code means in detail: [operator.md](operator.md).\n\n",
    );
    out.push_str(&format!("```text\n{}\n```\n\n", usage(&mut root)));
    out.push_str(&text(&long_about(&root)));
    out.push_str("\n\n## Global options\n\nEvery command takes them.\n\n");
    for arg in root.get_arguments().filter(|arg| shown(arg)) {
        out.push_str(&argument(arg));
    }
    if let Some(after) = root.get_after_help() {
        out.push_str(&format!("\n```text\n{}\n```\n", after.to_string().trim_end()));
    }
    out.push_str("\n## Commands\n\n| command | what it does |\n|---|---|\n");
    for (name, sub) in commands(&root, "relay") {
        let about = sub.get_about().map(ToString::to_string).unwrap_or_default();
        out.push_str(&format!("| [`{name}`](#{}) | {} |\n", slug(&name), text(&about).replace('|', "\\|")));
    }
    for (name, sub) in commands(&root, "relay") {
        let level = if name.matches(' ').count() > 1 { "###" } else { "##" };
        out.push_str(&format!("\n{level} {name}\n\n"));
        out.push_str(&section(&mut sub.clone()));
    }
    out
}

/// How many commands docs/cli.md documents (each with a section of its own).
pub fn command_count() -> usize {
    let mut root = command();
    root.build();
    commands(&root, "relay").len()
}

/// Every command under `command`, depth first, with its full name
/// (`relay sandbox say`); clap's own `help` is left out.
fn commands(command: &Command, prefix: &str) -> Vec<(String, Command)> {
    let mut all = Vec::new();
    for sub in command.get_subcommands().filter(|sub| sub.get_name() != "help" && !sub.is_hide_set()) {
        let name = format!("{prefix} {}", sub.get_name());
        all.push((name.clone(), sub.clone()));
        all.extend(commands(sub, &name));
    }
    all
}

/// A command's section: its summary, usage, details, arguments,
/// subcommands and examples.
fn section(command: &mut Command) -> String {
    let about = command.get_about().map(ToString::to_string).unwrap_or_default();
    let mut out = format!("{}\n\n```text\n{}\n```\n", text(about.trim()), usage(command));
    let long = long_about(command);
    let details = long.strip_prefix(about.trim()).unwrap_or(&long).trim();
    if !details.is_empty() {
        out.push_str(&format!("\n{}\n", text(details)));
    }
    let arguments: Vec<&Arg> = command.get_arguments().filter(|arg| shown(arg) && !arg.is_global_set()).collect();
    if !arguments.is_empty() {
        let positional = arguments.iter().any(|arg| arg.is_positional());
        out.push_str(if positional { "\nArguments and options:\n\n" } else { "\nOptions:\n\n" });
        for arg in arguments {
            out.push_str(&argument(arg));
        }
    }
    let subs: Vec<&Command> = command.get_subcommands().filter(|sub| sub.get_name() != "help").collect();
    if !subs.is_empty() {
        out.push_str("\nSubcommands:\n\n");
        for sub in subs {
            let about = sub.get_about().map(ToString::to_string).unwrap_or_default();
            let name = format!("relay {} {}", command.get_name(), sub.get_name());
            out.push_str(&format!("- [`{}`](#{}): {}\n", sub.get_name(), slug(&name), text(&about)));
        }
    }
    if let Some(examples) = command.get_after_long_help() {
        let examples = examples.to_string();
        // "# what" then the command line: a blank line before each but the first.
        let lines: Vec<String> = examples
            .lines()
            .skip(1)
            .map(str::trim)
            .enumerate()
            .map(|(n, line)| if n > 0 && line.starts_with('#') { format!("\n{line}") } else { line.to_string() })
            .collect();
        out.push_str(&format!("\nExamples:\n\n```sh\n{}\n```\n", lines.join("\n")));
    }
    out
}

fn usage(command: &mut Command) -> String {
    command.render_usage().to_string().trim().to_string()
}

fn long_about(command: &Command) -> String {
    command.get_long_about().or(command.get_about()).map(ToString::to_string).unwrap_or_default().trim().to_string()
}

/// Not clap's own `--help` and `--version`, nor what is hidden.
fn shown(arg: &Arg) -> bool {
    !arg.is_hide_set() && !matches!(arg.get_id().as_str(), "help" | "version")
}

/// One argument as a list item: its names, its help, then what clap knows
/// of it (required, repeatable, default, environment variable, choices).
fn argument(arg: &Arg) -> String {
    let values: Vec<String> = arg
        .get_value_names()
        .map(|names| names.iter().map(ToString::to_string).collect())
        .unwrap_or_else(|| vec![arg.get_id().as_str().to_uppercase()]);
    let takes_value = arg.get_action().takes_values();
    let name = if arg.is_positional() {
        let value = values.join(" ");
        if arg.is_required_set() { format!("<{value}>") } else { format!("[{value}]") }
    } else {
        let mut name = String::new();
        if let Some(short) = arg.get_short() {
            name.push_str(&format!("-{short}, "));
        }
        name.push_str(&format!("--{}", arg.get_long().unwrap_or_default()));
        if takes_value {
            name.push_str(&format!(" <{}>", values.join("> <")));
        }
        name
    };
    let help = arg.get_long_help().or(arg.get_help()).map(ToString::to_string).unwrap_or_default();
    let mut line = format!("- `{name}`: {}", text(help.trim()));
    if !line.ends_with('.') {
        line.push('.');
    }
    if arg.is_required_set() && !arg.is_positional() {
        line.push_str(" Required.");
    }
    let repeatable = matches!(arg.get_action(), clap::ArgAction::Append | clap::ArgAction::Count);
    if repeatable && !help.to_lowercase().contains("repeat") {
        line.push_str(" Repeatable.");
    }
    let defaults: Vec<String> = arg.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect();
    if !defaults.is_empty() && takes_value {
        line.push_str(&format!(" Default: `{}`.", defaults.join(",")));
    }
    if let Some(env) = arg.get_env() {
        line.push_str(&format!(" Environment: `{}`.", env.to_string_lossy()));
    }
    let choices: Vec<String> =
        arg.get_possible_values().iter().filter(|v| !v.is_hide_set()).map(|v| format!("`{}`", v.get_name())).collect();
    if !choices.is_empty() && !arg.is_hide_possible_values_set() {
        line.push_str(&format!(" One of {}.", choices.join(", ")));
    }
    line.push('\n');
    line
}

/// Help text as Markdown: outside code spans, `<` and `*` are escaped (they
/// would start an HTML tag or emphasis), and `docs/PAGE.md#part` becomes a
/// link (docs/cli.md sits beside those pages).
fn text(help: &str) -> String {
    let link = regex::Regex::new(r"docs/([a-z0-9-]+\.md(?:#[a-z0-9_-]+)?)").expect("a valid regex");
    let mut out = String::new();
    for (n, part) in help.split('`').enumerate() {
        if n > 0 {
            out.push('`');
        }
        if n % 2 == 1 {
            out.push_str(part);
            continue;
        }
        let escaped = part.replace('<', "&lt;").replace('*', "\\*");
        out.push_str(&link.replace_all(&escaped, "[docs/$1]($1)"));
    }
    out
}

/// The anchor GitHub gives a heading: lower case, spaces as dashes, other
/// punctuation but `-` and `_` dropped.
pub fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests;
