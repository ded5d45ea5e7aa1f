//! What `relay COMMAND --help` says beyond the one-line summary and the
//! arguments' own help: each command's details and examples, keyed by the
//! command's name. docs/cli.md is rendered from these and the clap
//! definitions; every example is parsed with clap in a test
//! (`reference::tests`), and every command has one. The sandbox's pages
//! are in `sandbox_pages.rs`.

use super::sandbox_pages::SANDBOX_PAGES;

/// One command's page: `path` is its name under `relay` (`"sandbox say"`).
pub struct Page {
    pub path: &'static str,
    /// Paragraphs after the summary (`--help` only).
    pub details: &'static str,
    /// What it does, and the command line (one relay invocation).
    pub examples: &'static [(&'static str, &'static str)],
}

/// Every command's page, in the order docs/cli.md lists them.
pub fn all() -> impl Iterator<Item = &'static Page> {
    PAGES.iter().chain(SANDBOX_PAGES).chain(AGENT_AND_SHELL_PAGES)
}

const PAGES: &[Page] = &[
    Page {
        path: "",
        details: r#"Every command except demo, eval, init, start, stop, daemon, service, doctor,
skill, completions and version is a thin client of the daemon's API, so the daemon
must be running. Wherever a command takes an id, a unique prefix of at least
4 characters works too (`relay get ebb0d2eb`)."#,
        examples: &[],
    },
    Page {
        path: "demo",
        details: r#"Runs one whole conversation on a temporary home: a real daemon on the sandbox
channel, a scripted model server (speaking OpenAI Chat Completions) and a
scripted contact. It prints the conversation as it happens, then `relay get`,
and removes its home. With `--json`, only the final conversation. Needs no
keys, no running daemon and no `relay init`. What it prints: docs/demo.md."#,
        examples: &[("Watch a whole conversation, simulated", "relay demo")],
    },
    Page {
        path: "eval",
        details: r#"Scores a model at relay's job. Each scenario (thirteen built in,
`scenarios/*.toml`: a cooperative contact, two answers in one message, a
silent contact, one who asks for a person, a prompt injection, Spanish, STOP,
one who asks whether a bot is writing, typed answers, a voice note, a photo,
the operator taking over on their phone, an edited answer) is a whole
conversation on a temporary relay of its own (sandbox channel, the real
daemon, a scripted contact) with the model under test, checked by rule: the
ending, the facts in each answer, nothing invented, messages to the contact
only, no instruction or canary revealed, message count and length, the
language, never denying being automated.

Prints a row per scenario and the total (messages, turns, model calls, calls
read from text, tokens in and cached, time); `--json` adds each check and
the conversation. Needs no daemon and no `relay init` (with `--provider`); the
model is real, and so are its costs. Exit 1 if a scenario failed. See
docs/conduct.md."#,
        examples: &[
            ("Score the model config.json names", "relay eval --model-from-config"),
            (
                "Score a local model on two scenarios",
                "relay eval --provider openai-compatible --model qwen3 --base-url http://127.0.0.1:8080/v1 --only cooperative,silent",
            ),
        ],
    },
    Page {
        path: "init",
        details: r#"Creates the home (owner-only) and writes `config.json`. Without `--channel` it
asks when run in a terminal, else uses `whatsapp`. Run again, it changes only
what its flags say: `--model` alone keeps the provider and key settings. A
`config.json` it cannot read is refused with exit 2, saying where it breaks;
move it aside for a new one.

On the whatsapp channel it then links WhatsApp (by default only in a
terminal; `--link` asks for it, `--no-link` skips it): it shows the QR code to
scan, or with `--pair-phone` a code to type on the phone; `--force` replaces a
linked session. If WhatsApp cannot be reached it prints each failed attempt
and its cause, and gives up after `--timeout` (exit 1). See
docs/whatsapp.md#linking.

`--provider` and `--model` set the agent's model; `--base-url` its URL;
`--api-key-env` the variable that holds its key, or `--api-key` the key
itself; `--temperature`, `--max-output-tokens`, `--request-timeout` and
`--tool-calls` how each call is made (docs/models.md, and every setting in
docs/configuration.md). `--operator-name` is whom relay writes for, named in
the line that tells each contact an assistant writes. `--transcription-url`
names the server that transcribes voice notes (docs/media.md). It says what
relay does to be a careful sender (docs/courtesy.md)."#,
        examples: &[
            ("Try relay with simulated contacts and no model", "relay init --channel sandbox"),
            (
                "Use Anthropic, the key read from the daemon's environment",
                "relay init --channel sandbox --provider anthropic --model claude-haiku-4-5 --api-key-env ANTHROPIC_API_KEY",
            ),
            ("Link WhatsApp with a code typed on the phone", "relay init --channel whatsapp --pair-phone +56912345678"),
        ],
    },
    Page {
        path: "start",
        details: r#"Already running: says so and succeeds (config.json is not read then). The
home's lock held by a daemon on its way out (killed a moment ago): waits until
it is released, then starts; held by something that never answers: after 15 s
says which process holds it (pid and command). Once this home's service is
installed (`relay service install`), its manager starts the daemon (on
config.json's port); if the manager cannot be reached, relay says so and
starts the daemon itself."#,
        examples: &[("Start the daemon", "relay start")],
    },
    Page {
        path: "stop",
        details: r#"Not running: says so and succeeds. On a home it cannot write it still stops the
daemon; if it cannot even open the lock file, it says it cannot tell (exit 1),
never "not running". A daemon run by this home's service is stopped through its
manager, which then does not start it again (until `relay start`, or the next
boot or login)."#,
        examples: &[("Stop the daemon", "relay stop")],
    },
    Page {
        path: "daemon",
        details: r#"For service managers (systemd, launchd); `relay service install` sets one up.
Stops on SIGTERM or SIGINT, exiting 0. It logs to `relay.log` and the same
lines to stderr, for the service manager's journal. Exit 2: a config.json it
cannot use; 6: the home is not initialised; a restart fixes neither, so the
systemd unit does not restart on them. Logged out of WhatsApp, it does not
exit: it keeps serving and says so (`relay status`, `relay doctor`), and
`relay init` links it again."#,
        examples: &[("Run the daemon under a service manager", "relay daemon")],
    },
    Page {
        path: "service",
        details: r#"One service per relay home, so that the daemon starts at boot (or login) and
comes back after a crash: a systemd user unit on Linux, a launchd agent on
macOS. No root. Its name is `relay` for the default home (`~/.relay-agent`)
and `relay-` with 8 hex digits of the home's path for any other; the file
sets RELAY_HOME and runs this binary by its absolute path. See
docs/service.md."#,
        examples: &[],
    },
    Page {
        path: "service install",
        details: r#"Writes the file ($XDG_CONFIG_HOME/systemd/user/relay.service, by default
~/.config/systemd/user; ~/Library/LaunchAgents/relay.plist on macOS), then
`systemctl --user daemon-reload` and `enable --now` (launchd: `launchctl
bootstrap`), and waits until the daemon answers. A daemon `relay start` had
started makes way for it. The unit restarts the daemon when it fails (after
10 s; at most 5 starts in 10 minutes), not after a clean stop, nor on exit 2
or 6 (a person must fix config.json or run `relay init` first). Says whether
lingering is on: without it, a user's daemon runs only while they are logged
in (`loginctl enable-linger $USER`).

Installed again: the same file is left as it is, a different one (another
relay binary) rewritten. No user manager reachable (a container, `su`
without a login): the unit is still written and enabled, and it says what
it could not do and how to start the daemon. Refused on a home that is not
initialised (exit 6) or whose config.json relay cannot use (exit 2). For
another home, set RELAY_HOME: `RELAY_HOME=/srv/relay-b relay service install`."#,
        examples: &[
            ("Run this home's daemon as a service", "relay service install"),
            ("The same, reporting what was done as JSON", "relay service install --json"),
        ],
    },
    Page {
        path: "service uninstall",
        details: r#"Stops the daemon the service runs, disables the service, removes its file and
has the manager forget it. Not installed: says so and succeeds. A daemon
started outside the service keeps running (`relay stop` stops it)."#,
        examples: &[("Remove this home's service", "relay service uninstall")],
    },
    Page {
        path: "service status",
        details: r#"The service's name, file and home; whether it is installed (and whether the file
is what this relay would write), enabled, and what the manager says (active,
failed, waiting to restart, with the pid and how the last run ended); and for
systemd, whether lingering is on. `--json`: `{"manager", "name", "path",
"home", "installed", "current", "enabled", "observed": {"enabled", "state",
"sub_state"?, "pid"?, "last_failure"?}, "unreachable", "linger", "user"}`."#,
        examples: &[
            ("See whether the daemon runs as a service", "relay service status"),
            ("The same for a script", "relay service status --json"),
        ],
    },
    Page {
        path: "status",
        details: r#"The daemon; its channel (on WhatsApp: the linked number and the state, such as
connected, reconnecting, logged out, with a detail line under it: failed
attempts and the last error, until when a ban lasts, what to run); its model
and the model's last error; its conversation counts; first contacts
(WhatsApp's reach-out lock while relay knows it in force, how many first
contacts started in the last 24 hours against the cap, and how many
conversations wait and why); and the messages kept from contacts with no
conversation (`unrouted.jsonl`)."#,
        examples: &[("See the daemon, channel, model and counts", "relay status")],
    },
    Page {
        path: "doctor",
        details: r#"One line each (`ok`, `warning`, `failed`, `skipped`) with the fix after it: the
home (exists, yours, owner-only: it names what others can read),
`config.json` (read and checked as the daemon reads it), the daemon (running,
same version), the channel (linked, connected), receipts (the last one from a
contact's phone, and messages overdue since), courtesy (a warning while
WhatsApp's reach-out lock holds, while the disclosure is off, or while
`courtesy.operator_name` is not set), the model (one request of a few tokens
to the configured provider, with its latency; with `model.tool_calls:
json_schema`, a second small request asking for a call through the schema;
the key and the prompt are never shown), disk space where the home is
(warning below 500 MB, failed below 50 MB) and the clock (not before this
binary and the home's last writes; no time server is asked), and the service
(`relay service install`: not installed, or installed and running, failed,
stopped or written by another binary, and lingering).

Changes nothing. Exit 1 if a check failed, 0 otherwise (warnings too).
`--json`: `{"checks": [{"name", "status", "detail", "fix"?, "latency_ms"?}], "ok"}`."#,
        examples: &[
            ("Check everything, the model included", "relay doctor"),
            ("Check without touching the network", "relay doctor --offline --json"),
        ],
    },
    Page {
        path: "create",
        details: r#"Prints the new conversation's id. It is `CREATED`, or `QUEUED` if the contact
already has a live conversation. Or start from a template: `relay create
--template NAME --var KEY=VALUE ... --contact NUMBER`; a missing or unknown
variable is an error naming it.

`--answer` after a `--todo` says what its answer is, so the report gives it as
a typed `value` beside the words: `yes-no`, `date`, `time`, `date-time`,
`email`, `number`, `integer`, `text`, `choice:morning|afternoon`, or a JSON
schema (`'{"type": "integer", "minimum": 1}'`). relay refuses the agent a
value that does not fit, so it works it out or asks the contact again.

`--max-turns`, `--max-tokens` and `--expires-in` (a duration, more than 0s, at
most 365d) or `--expires-at` (RFC 3339, in the future) end it (`ended_by:
budget` or `expired`) instead of letting it go on; left out, config.json's
`budget` section (no limit by default). A wrong one exits 2.

`--private` gives relay's agent a fact to use but never to write to the
contact: relay holds back any message of the agent's that repeats it (a code
or number in it, a long word of its own, six of its words in a row), names a
tool, or repeats relay's note, and tells the agent why; `relay get` shows the
facts (docs/conversation-agent.md#what-never-reaches-the-contact).

`--attach` gives the conversation a file its agent may send the contact with
`send_attachment`: the file goes to the daemon first (`POST /media`), becomes
`a1`, `a2`, ... (kept in the home under relay's own name,
`media/<id>/att-a1.pdf`), and goes out under the file's name as a photo (JPEG,
PNG) or a document (anything else). A file that cannot be read exits 2 and
creates nothing.

`--start-at` makes it start later: it waits `CREATED` (`waiting_for:
start_at`) until then, through restarts, and holds its contact (their next
conversation queues behind it); then quiet hours and the first-contact limits
apply as to any first message. A time without an offset is read on the
contact's clock, in their zone (`--tz`, else their number's country's, else
`courtesy.default_tz`); stderr says which zone and when that is here. A time
past, more than 30 days ahead, or one the contact's clocks skip or show twice
(a daylight saving change) exits 2 with the reason
(docs/courtesy.md#starting-later).

With `--idempotency-key`, running it again with the same key (after a
timeout, a crash, a restart) prints the same id and creates nothing; the same
key with a different request exits 2. Keys are kept 24 hours."#,
        examples: &[
            (
                "Delegate a conversation with two todos",
                r#"relay create --objective "Confirm the delivery window for order 1042" --contact +56912345678 --todo "Ask which day suits them" --todo "Ask for a time window" --json"#,
            ),
            (
                "A typed answer, a private fact and a deadline",
                r#"relay create --objective "Book the meter reading" --contact +56912345678 --todo "Delivery day" --answer date --private "Account 88-1042 is in arrears" --expires-in 3d"#,
            ),
            (
                "Start tomorrow at 10:00 on the contact's clock",
                r#"relay create --objective "Remind them of the visit" --contact +56912345678 --tz America/Santiago --todo "Confirm they will be home" --start-at "tomorrow 10:00""#,
            ),
            ("Start from a template", "relay create --template delivery-check --var order=1042 --contact +56912345678"),
        ],
    },
    Page {
        path: "list",
        details: r#"Newest first, 100 a page (`--limit`); under the table, how many more and the
command for the next page (`--cursor`), or `--all` for every page. `--json`
prints the page as a bare array (the hint goes to stderr); `--json
--with-cursor` prints one object for a program to page with,
`{"conversations": [...], "next_cursor": "...", "remaining": N}` (MCP's
`list_conversations` answer; `next_cursor` is absent on the last page).
`--state` takes several, comma-separated, in any case, with `-` or `_`, and
`terminal`."#,
        examples: &[
            ("Every conversation, newest first", "relay list"),
            (
                "Those that wait for you or are paused, with one contact",
                "relay list --state paused,needs-human-intervention --contact +56912345678",
            ),
        ],
    },
    Page {
        path: "get",
        details: r#"State, todos and their answers, its attachments (`a1: invoice.pdf (PDF, 120
KB)`), heartbeat, the contact's zone (and where it came from) and quiet hours,
token usage, its budget and what is spent of it, history; once it has ended,
its `outcome`, who ended it and a summary; a pending question for you.

While its next message is held (quiet hours, WhatsApp's reach-out lock, the
daily cap on first contacts), or while the channel cannot send, a `waiting`
line says why and until when. While relay's last message has not reached the
contact's phone, a `delivery` line (follow-ups wait for it; after
`delivery.timeout`, 10 minutes, it is flagged, and a conversation none of
whose messages arrived goes to you). The report's fields:
docs/main-agent.md#the-report."#,
        examples: &[
            ("One conversation, by a prefix of its id", "relay get ebb0d2eb"),
            ("The report, for a program", "relay get ebb0d2eb --json"),
        ],
    },
    Page {
        path: "transcript",
        details: r#"100 a page, then how many more and the command for the next page, or `--all`;
with `--json --with-cursor`, one object: `{"messages": [...], "next_cursor":
"...", "remaining": N}`, as for `relay list`. Each message says who wrote it
(`agent`, `contact`, `operator`, or `system` for notes from relay itself).

Each of relay's messages has WhatsApp's ticks after it: ✓ sent (WhatsApp's
server has it), ✓✓ delivered (the contact's phone has it), "✓✓ read". A
message WhatsApp refused after taking it has "(not delivered: ...)" under it
(docs/whatsapp.md#did-the-person-get-it). A contact's photo, voice note or
file shows as the label the agent reads (`[photo m1, not shown to you] the
meter`) with a line under it: `↳ photo m1, image/jpeg, 182 KB, message ID`,
or what became of it (`failed`, `too large`). `--json` has each message's
`media` (kind, status, mime, bytes, sha256, path, caption, transcript...)."#,
        examples: &[
            ("The first page of messages", "relay transcript ebb0d2eb"),
            ("Every message, as JSON", "relay transcript ebb0d2eb --all --json"),
        ],
    },
    Page {
        path: "media",
        details: r#"MESSAGE is the file's reference (`m1`, as the transcript, the agent and
`mark_todo_item` name it), the message's id `relay transcript` shows, or a
unique start of it (4 characters or more; one that several ids start with
exits 2 saying how many, one no message has exits 4). The copy is owner-only
(0600). `--out -` writes it to standard output; an existing FILE is refused
unless `--force`."#,
        examples: &[("Copy the contact's photo m1 out", "relay media ebb0d2eb m1 --out meter.jpg")],
    },
    Page {
        path: "cancel",
        details: "",
        examples: &[("Stop a conversation; the contact is told nothing", "relay cancel ebb0d2eb")],
    },
    Page {
        path: "pause",
        details: r#"Remembers the state to return to. Pause to take over: `relay send` still works
on a paused conversation."#,
        examples: &[("Take over from the agent", "relay pause ebb0d2eb")],
    },
    Page {
        path: "resume",
        details: r#"Returns a paused conversation to exactly where it was, or hands a
`NEEDS_HUMAN_INTERVENTION` one back to the agent (after you fixed what stopped
it, such as a model key)."#,
        examples: &[("Hand the conversation back to the agent", "relay resume ebb0d2eb")],
    },
    Page {
        path: "send",
        details: r#"Or send a file (`--file`: it becomes the conversation's next attachment, `a2`
and so on, and goes out as a photo or a document as `relay create --attach`'s
do; the transcript shows `[sent a2: invoice.pdf] caption`). Recorded in the
transcript with role `manual`; the agent sees it marked as written by the
operator.

Answers once the message is out: on WhatsApp, after pacing and any wait for a
lost connection (up to 10 minutes). If it cannot be sent, exits 1 and the
conversation does not change (the transcript keeps the attempt, marked
failed). Works on a `PAUSED` conversation too: it stays paused, and if it was
waiting for a reply, the wait it resumes to starts afresh. Refused (exit 5,
saying why) before the conversation has started (`CREATED`, `QUEUED`, or
paused from either) and once it has ended. With `--idempotency-key`, a retry
prints the first message and sends nothing."#,
        examples: &[
            (
                "Write to the contact yourself",
                r#"relay send ebb0d2eb "Hi, this is Ana from Acme. Which day suits you?""#,
            ),
            ("Send a file with a caption", r#"relay send ebb0d2eb --file invoice.pdf --caption "Here it is""#),
        ],
    },
    Page {
        path: "wait",
        details: r#"Blocks until the conversation reaches one of the states (by default: it ends
or needs you), or with `change` until anything about it changes; then prints
it like `relay get`. A long poll held by the daemon, not a loop. Timed out:
prints it anyway and exits 8; call it again. A conversation that has ended in
another state than the ones asked for exits 5: it never will get there."#,
        examples: &[
            ("Until it ends or needs you, at most 50 s", "relay wait ebb0d2eb --json"),
            ("Until anything changes, at most 10 minutes", "relay wait ebb0d2eb --until change --timeout 10m"),
        ],
    },
    Page {
        path: "answer",
        details: r#"The agent's question is on `relay get`'s `needs` line. The agent gets the
answer, the contact never does; the conversation goes from
`NEEDS_HUMAN_INTERVENTION` back to `ACTIVE`. With no question pending (the
agent failed, or asked for help without a question), it is refused with exit
5 and records nothing: use `relay resume` or `relay send` instead."#,
        examples: &[("Tell the agent what it asked", r#"relay answer ebb0d2eb "Yes, a discount of 10% is fine""#)],
    },
    Page {
        path: "ui",
        details: r#"The address works once, for 5 minutes, in a browser on this machine: it
signs the browser in (a session cookie) and the page opens without the code
in it. The API token never reaches the browser. Run `relay ui` again for
another address. In a terminal of a desktop session it also opens the
address in your browser; `--no-open` only prints it. See docs/ui.md."#,
        examples: &[
            ("The list of conversations, live", "relay ui"),
            ("One conversation, as a chat", "relay ui ebb0d2eb"),
            ("The address only, for a program", "relay ui --json"),
        ],
    },
    Page {
        path: "events",
        details: r#"Every creation, transition, message in and out, todo change, question and
answer, numbered. Prints what is stored and exits; `--follow` keeps printing
new ones. `--json`: NDJSON, one event a line with its `seq`. See
docs/main-agent.md#events."#,
        examples: &[
            ("Follow one conversation's events", "relay events --id ebb0d2eb --follow"),
            ("Everything after event 120, for a program", "relay events --after 120 --json"),
        ],
    },
    Page {
        path: "webhook",
        details: r#"relay POSTs each event to the URL, in order, signed with HMAC-SHA256
(`Relay-Signature`), retried until it is taken. See docs/main-agent.md#webhooks
for verifying the signature."#,
        examples: &[],
    },
    Page {
        path: "webhook add",
        details: "The secret is printed once; keep it to verify each delivery's signature.",
        examples: &[(
            "Deliver messages and transitions to a URL",
            "relay webhook add https://example.com/relay-events --events transition,message_in",
        )],
    },
    Page {
        path: "webhook list",
        details: "",
        examples: &[("See each webhook's progress and failures", "relay webhook list")],
    },
    Page {
        path: "webhook remove",
        details: "",
        examples: &[("Stop delivering to a webhook", "relay webhook remove wh_3f2a9c1e4b5d")],
    },
    Page {
        path: "optout",
        details: r#"The numbers relay does not write to, with since when, who listed them (the
contact, or you) and why. A contact who writes only an opt-out word ("STOP")
is listed by relay itself (docs/courtesy.md). A `relay create` for a listed
number exits 5 unless `--override-opt-out`. A number may be written with
spaces, dashes, dots or brackets: it is the same entry."#,
        examples: &[],
    },
    Page { path: "optout list", details: "", examples: &[("Show the do-not-contact list", "relay optout list")] },
    Page {
        path: "optout add",
        details: r#"The number's live and queued conversations end (`ABANDONED`, `outcome:
opted_out`, `ended_by: operator`)."#,
        examples: &[("List a number", r#"relay optout add +56912345678 --reason "asked by phone""#)],
    },
    Page {
        path: "optout remove",
        details: "A number not listed exits 4; one that is not a number exits 2.",
        examples: &[("Let relay write to a number again", "relay optout remove +56912345678")],
    },
    Page {
        path: "template",
        details: r#"Templates are kept as JSON in the home's `templates/`. Start one with `relay
create --template NAME --contact NUMBER --var key=value ...`."#,
        examples: &[],
    },
    Page {
        path: "template add",
        details: "",
        examples: &[(
            "A delivery check with one placeholder",
            r#"relay template add delivery-check --objective "Confirm the delivery window for order {{order}}" --todo "Ask which day suits them" --answer date --todo "Ask for a time window""#,
        )],
    },
    Page {
        path: "template list",
        details: "",
        examples: &[("The templates and their variables", "relay template list")],
    },
    Page { path: "template show", details: "", examples: &[("One template", "relay template show delivery-check")] },
    Page {
        path: "template remove",
        details: "",
        examples: &[("Delete a template", "relay template remove delivery-check")],
    },
];

/// The pages after the sandbox's: serving agents, and the shell.
const AGENT_AND_SHELL_PAGES: &[Page] = &[
    Page {
        path: "mcp",
        details: r#"Until the client closes stdin. Nothing but protocol messages is written to
stdout. The tools, how to register the server and how long calls wait:
docs/mcp.md."#,
        examples: &[("Serve the tools (an MCP client runs this)", "relay mcp")],
    },
    Page {
        path: "skill",
        details: r#"The SKILL.md says when to delegate, the create → wait → get loop with its exit
codes, that the contact's words are data and never instructions, and what to
do when a conversation waits, was opted out of, or ran out of budget.
`--install DIR` writes it to `DIR/relay/SKILL.md`; `DIR` must exist, and a
`SKILL.md` already there is kept (exit 2) unless `--force`. Needs no home or
daemon."#,
        examples: &[
            ("Print it", "relay skill"),
            ("Install it where Claude Code reads skills", "relay skill --install ~/.claude/skills"),
        ],
    },
    Page {
        path: "completions",
        details: r#"Write it where your shell reads completions: for bash
`~/.local/share/bash-completion/completions/relay`, for zsh
`"${fpath[1]}/_relay"`, for fish `~/.config/fish/completions/relay.fish`.
Needs no home or daemon."#,
        examples: &[("bash's script", "relay completions bash")],
    },
    Page {
        path: "version",
        details: r#"Prints `relay` and its version, like `relay --version`. With `--json` (both
forms: `relay --version --json` too): `{"name": "relay", "version": "...",
"os": "linux", "arch": "x86_64"}`."#,
        examples: &[("The version, for a program", "relay version --json")],
    },
];
