//! The pages of `relay sandbox` and its commands (see `pages.rs`).

use super::pages::Page;

pub const SANDBOX_PAGES: &[Page] = &[
    Page {
        path: "sandbox",
        details: r#"Sandbox only: on a daemon that is not on the sandbox channel these exit 5.
Nothing leaves the machine. By default a simulated phone gets messages at once
and reads them when its contact writes."#,
        examples: &[],
    },
    Page {
        path: "sandbox say",
        details: r#"A file goes to the daemon first (`POST /media`). `--mime` is what the message
claims the file is (it may lie, as a real one may); `--seconds` how long the
message claims a voice note, audio or video plays (the transcript shows it
unless relay can read the file's own length, as from an Ogg voice note, which
wins as it does on WhatsApp; refused for other files); `--fail-downloads` how
many fetches of it fail first, as on a bad network.

`--from-operator` plays you writing to the contact on your own phone (relay is
one linked device of your number): in a live conversation it is recorded as
yours and the conversation pauses until `relay resume`
(docs/whatsapp.md#what-relay-takes-and-what-it-ignores). `--reply-to` makes the
contact's message a reply quoting MESSAGE. A number with no live conversation
is not answered: its message is kept in `unrouted.jsonl`, as on WhatsApp."#,
        examples: &[
            ("The contact answers", r#"relay sandbox say +56912345678 "Thursday works, after 3pm""#),
            ("The contact sends a voice note", "relay sandbox say +56912345678 --voice note.ogg"),
            (
                "You write from your own phone",
                r#"relay sandbox say +56912345678 "I'll take it from here" --from-operator"#,
            ),
        ],
    },
    Page {
        path: "sandbox react",
        details: r#"MESSAGE, here and for `edit` and `delete`: an id `relay transcript --json`
shows, its start (4 characters or more), or its file's reference (`m1`). relay
records the reaction with the message it acts on, and the agent reads it as
`[reacted 👍 to your message "..."]`."#,
        examples: &[("The contact likes a message", "relay sandbox react +56912345678 3eb0a1c2 👍")],
    },
    Page {
        path: "sandbox edit",
        details: r#"relay marks the edited message, and the answers resting on it
(`evidence[].changed`)."#,
        examples: &[("The contact corrects themselves", r#"relay sandbox edit +56912345678 3eb0a1c2 "Friday works""#)],
    },
    Page {
        path: "sandbox delete",
        details: "relay marks the deleted message, and the answers resting on it.",
        examples: &[("The contact deletes a message", "relay sandbox delete +56912345678 3eb0a1c2")],
    },
    Page { path: "sandbox call", details: "", examples: &[("The contact calls", "relay sandbox call +56912345678")] },
    Page {
        path: "sandbox outbox",
        details: r#"A file shows as `[document invoice.pdf 120 KB sha256:ab12cd34…] caption`
(`--json`: its `media` with kind, mime, bytes, sha256 and name)."#,
        examples: &[("What relay sent to one contact", "relay sandbox outbox --contact +56912345678")],
    },
    Page {
        path: "sandbox offline",
        details: r#"Without CONTACT, relay itself goes away from WhatsApp; `relay sandbox online`
brings it back (docs/whatsapp.md#connection-health). With CONTACT, the
contact's phone goes offline: messages stay ✓, not delivered."#,
        examples: &[
            ("The contact's phone goes offline", "relay sandbox offline +56912345678"),
            ("relay loses WhatsApp", "relay sandbox offline"),
        ],
    },
    Page {
        path: "sandbox online",
        details: r#"With `--cut-short`, the catch-up does not finish: what was held is lost, and
the conversations live then say their messages may be missing
(`messages_may_be_missing`)."#,
        examples: &[
            ("The contact's phone is back", "relay sandbox online +56912345678"),
            ("relay is back, and its catch-up is cut short", "relay sandbox online --cut-short"),
        ],
    },
    Page {
        path: "sandbox read",
        details: "",
        examples: &[("The contact reads everything", "relay sandbox read +56912345678")],
    },
    Page {
        path: "sandbox lock",
        details: r#"`relay status` shows the lock and what waits
(docs/whatsapp.md#first-contact-and-the-reach-out-lock)."#,
        examples: &[("WhatsApp locks first contacts for two hours", "relay sandbox lock --until 2h")],
    },
    Page { path: "sandbox unlock", details: "", examples: &[("Lift the lock", "relay sandbox unlock")] },
];
