//! `relay sandbox say|react|edit|delete|call|outbox|offline|online|read|lock|unlock`:
//! play a contact (and their phone, and WhatsApp's reach-out lock) on the sandbox
//! channel, and read what relay sent. For trying relay and for tests; on
//! the WhatsApp channel the daemon refuses them.

use super::output::{complain, say};
use super::{CliError, Context, output};
use crate::api::{
    MediaKind, OutboxQuery, PhoneAction, PhoneRequest, SandboxAct, SandboxActRequest, SandboxLockRequest,
    SandboxLockState, SandboxMedia, SandboxSayRequest, SandboxSayResponse,
};
use crate::client::Client;
use crate::contact::Contact;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Deliver a message from CONTACT, as if it came over WhatsApp: TEXT, or
    /// a file (with TEXT as its caption).
    Say {
        /// The simulated contact, e.g. +56912345678.
        contact: String,
        /// What they write (a file's caption).
        #[arg(required_unless_present_any = ["image", "voice", "audio", "video", "document", "sticker"])]
        text: Option<String>,
        #[command(flatten)]
        file: Box<SaidFile>,
        #[command(flatten)]
        claims: Box<FileClaims>,
        /// The operator writes this to CONTACT on their own phone (relay is
        /// one linked device of their number): recorded as the operator's,
        /// and the conversation pauses until `relay resume`.
        #[arg(long)]
        from_operator: bool,
        /// The message this one replies to (quotes): an id `relay transcript
        /// --json` shows, its start (4 characters or more), or its file's
        /// reference (m1).
        #[arg(long, value_name = "MESSAGE")]
        reply_to: Option<String>,
    },
    /// CONTACT reacts to MESSAGE with EMOJI ("" takes the reaction back).
    React {
        /// The simulated contact, e.g. +56912345678.
        contact: String,
        /// An id `relay transcript --json` shows, its start (4 characters or
        /// more), or its file's reference (m1).
        message: String,
        /// The emoji, e.g. 👍; "" takes the reaction back.
        emoji: String,
    },
    /// CONTACT edits their MESSAGE to TEXT.
    Edit {
        /// The simulated contact, e.g. +56912345678.
        contact: String,
        /// An id `relay transcript --json` shows, its start (4 characters or
        /// more), or its file's reference (m1).
        message: String,
        /// The message's new text.
        text: String,
    },
    /// CONTACT deletes their MESSAGE for everyone.
    Delete {
        /// The simulated contact, e.g. +56912345678.
        contact: String,
        /// An id `relay transcript --json` shows, its start (4 characters or
        /// more), or its file's reference (m1).
        message: String,
    },
    /// CONTACT calls (relay never answers: the operator's phone rings).
    Call {
        /// The simulated contact, e.g. +56912345678.
        contact: String,
    },
    /// List what relay sent to contacts, oldest first.
    Outbox {
        /// Only messages to this contact.
        #[arg(long)]
        contact: Option<String>,
    },
    /// CONTACT's phone goes offline: what relay sends stays `sent` (no ✓✓).
    /// Without CONTACT, relay itself goes offline from WhatsApp: what
    /// contacts write is held, and relay sends nothing.
    Offline {
        /// The simulated contact, e.g. +56912345678.
        contact: Option<String>,
    },
    /// CONTACT's phone comes back: what it held is delivered. Without
    /// CONTACT, relay comes back: a catch-up hands over what contacts wrote
    /// meanwhile (follow-ups and first messages wait for it).
    Online {
        /// The simulated contact, e.g. +56912345678.
        contact: Option<String>,
        /// Without CONTACT: the catch-up does not finish; what was held is
        /// lost, and the conversations live then are marked as maybe
        /// missing messages.
        #[arg(long)]
        cut_short: bool,
    },
    /// CONTACT reads every message their phone has (blue ticks).
    Read {
        /// The simulated contact, e.g. +56912345678.
        contact: String,
    },
    /// Simulate WhatsApp's reach-out lock: until it ends, a message to a
    /// contact that has neither written nor received one is refused (error
    /// 463), and relay holds first messages to new contacts.
    Lock {
        /// How long from now it holds, e.g. 30m, 2h, 1d.
        // Hyphens allowed: "-2h" is a wrong duration, said as such.
        #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
        until: String,
        /// Asking WhatsApp about the lock says none holds: only the refused
        /// first message (error 463) reveals it.
        #[arg(long)]
        unreported: bool,
    },
    /// Lift the simulated reach-out lock (relay is told, and asks again).
    Unlock,
}

/// The file a simulated contact sends, one kind at most.
#[derive(Debug, clap::Args)]
#[group(multiple = false)]
pub struct SaidFile {
    /// A photo.
    #[arg(long, value_name = "FILE")]
    image: Option<std::path::PathBuf>,
    /// A voice note (recorded with the microphone button).
    #[arg(long, value_name = "FILE")]
    voice: Option<std::path::PathBuf>,
    /// An audio file.
    #[arg(long, value_name = "FILE")]
    audio: Option<std::path::PathBuf>,
    /// A video.
    #[arg(long, value_name = "FILE")]
    video: Option<std::path::PathBuf>,
    /// A document (its name is sent too).
    #[arg(long, value_name = "FILE")]
    document: Option<std::path::PathBuf>,
    /// A sticker.
    #[arg(long, value_name = "FILE")]
    sticker: Option<std::path::PathBuf>,
}

/// How the message describes its file, as a phone's would.
#[derive(Debug, clap::Args)]
pub struct FileClaims {
    /// The type the message says the file is (it may lie); default: what it is.
    #[arg(long)]
    mime: Option<String>,
    /// How long the message says a voice note, audio or video plays, in
    /// seconds (it may lie); relay goes by the file's own length where it
    /// can read one (an Ogg voice note), as it does on WhatsApp.
    #[arg(long)]
    seconds: Option<u32>,
    /// The first N fetches of the file fail, as on a bad network.
    #[arg(long, value_name = "N", default_value_t = 0)]
    fail_downloads: u32,
}

impl SaidFile {
    /// The kind and path given, if any.
    fn given(self) -> Option<(MediaKind, std::path::PathBuf)> {
        [
            (MediaKind::Photo, self.image),
            (MediaKind::VoiceNote, self.voice),
            (MediaKind::Audio, self.audio),
            (MediaKind::Video, self.video),
            (MediaKind::Document, self.document),
            (MediaKind::Sticker, self.sticker),
        ]
        .into_iter()
        .find_map(|(kind, path)| path.map(|path| (kind, path)))
    }
}

pub async fn run(ctx: &Context, command: Command) -> Result<(), CliError> {
    let client = ctx.client()?;
    match command {
        Command::React { contact, message, emoji } => {
            let request = act(contact, SandboxAct::React, Some(message), Some(emoji), None);
            delivered(ctx, client.sandbox_act(&request).await?);
        }
        Command::Edit { contact, message, text } => {
            let request = act(contact, SandboxAct::Edit, Some(message), None, Some(text));
            delivered(ctx, client.sandbox_act(&request).await?);
        }
        Command::Delete { contact, message } => {
            delivered(ctx, client.sandbox_act(&act(contact, SandboxAct::Delete, Some(message), None, None)).await?);
        }
        Command::Call { contact } => {
            delivered(ctx, client.sandbox_act(&act(contact, SandboxAct::Call, None, None, None)).await?);
        }
        Command::Say { contact, text, file, claims, from_operator, reply_to } => {
            let (media, note) = upload(&client, *file, *claims).await?.unzip();
            let request = SandboxSayRequest { contact, text: text.unwrap_or_default(), media, from_operator, reply_to };
            let said = client.sandbox_say(&request).await?;
            said_by(ctx, &said, from_operator);
            if let Some(note) = note.flatten().filter(|_| !ctx.json) {
                complain!("relay: note: {note}");
            }
        }
        Command::Lock { until, unreported } => {
            let lock = client.sandbox_lock(&SandboxLockRequest { lasts: until, unreported }).await?;
            lock_said(ctx, &lock);
        }
        Command::Unlock => {
            let lock = client.sandbox_unlock().await?;
            lock_said(ctx, &lock);
        }
        Command::Offline { contact: Some(contact) } => phone(ctx, &client, contact, PhoneAction::Offline).await?,
        Command::Online { contact: Some(contact), cut_short: false } => {
            phone(ctx, &client, contact, PhoneAction::Online).await?
        }
        Command::Online { contact: Some(_), cut_short: true } => {
            return Err(CliError::usage("--cut-short is for relay's own link: leave out CONTACT"));
        }
        Command::Offline { contact: None } => link(ctx, &client, false, false).await?,
        Command::Online { contact: None, cut_short } => link(ctx, &client, true, cut_short).await?,
        Command::Read { contact } => phone(ctx, &client, contact, PhoneAction::Read).await?,
        Command::Outbox { contact } => outbox(ctx, &client, contact).await?,
    }
    Ok(())
}

/// `relay sandbox outbox`: what relay has sent, to one contact or all.
async fn outbox(ctx: &Context, client: &Client, contact: Option<String>) -> Result<(), CliError> {
    let contact = match contact {
        Some(c) => Some(Contact::parse(&c).map_err(|e| CliError::usage(e.to_string()))?.to_string()),
        None => None,
    };
    let sent = client.sandbox_outbox(&OutboxQuery { contact: contact.clone() }).await?;
    if ctx.json {
        output::json(&sent);
    } else if sent.is_empty() {
        match contact {
            Some(contact) => say!("relay has sent nothing to {contact} yet."),
            None => say!("relay has sent nothing yet."),
        }
    } else {
        for e in &sent {
            let head = format!("{}  to {}  ", output::time(e.timestamp), e.contact);
            // A file: `[photo meter.jpg 120 KB sha256:ab12cd34…] caption`.
            let text = match &e.media {
                Some(file) => {
                    let about = format!(
                        "[{} {} {} sha256:{}…]",
                        file.kind.as_str(),
                        file.file_name,
                        crate::media::label::size(file.bytes),
                        &file.sha256[..file.sha256.len().min(8)]
                    );
                    if e.text.is_empty() { about } else { format!("{about} {}", e.text) }
                }
                None => e.text.clone(),
            };
            say!("{head}{}", output::hang(&text, head.chars().count()));
        }
    }
    Ok(())
}

async fn phone(
    ctx: &Context,
    client: &crate::client::Client,
    contact: String,
    action: PhoneAction,
) -> Result<(), CliError> {
    let phone = client.sandbox_phone(&PhoneRequest { contact, action }).await?;
    if ctx.json {
        output::json(&phone);
        return Ok(());
    }
    let who = &phone.contact;
    match action {
        PhoneAction::Offline => say!("{who}'s phone is offline: messages to it stay sent, not delivered."),
        PhoneAction::Online => {
            let read = match phone.read {
                0 => String::new(),
                n => format!(", and {} read while it was offline", output::count(n, "message")),
            };
            say!("{who}'s phone is online: {} delivered{read}.", output::count(phone.delivered, "held message"))
        }
        PhoneAction::Read if !phone.online => {
            say!("{who}'s phone is offline: what they read is told to relay when it is back online.")
        }
        PhoneAction::Read => say!("{who} read {}.", output::count(phone.read, "message")),
    }
    Ok(())
}

fn lock_said(ctx: &Context, lock: &SandboxLockState) {
    if ctx.json {
        output::json(lock);
        return;
    }
    match lock.until {
        Some(until) if lock.reported => say!(
            "Locked until {}: messages to new contacts are refused (error 463), and WhatsApp says so when asked.",
            output::time(until)
        ),
        Some(until) => say!(
            "Locked until {}: messages to new contacts are refused (error 463); asked, WhatsApp says nothing.",
            output::time(until)
        ),
        None => say!("Unlocked: messages to new contacts go out."),
    }
}

/// A contact's act, as the API takes it.
fn act(
    contact: String,
    act: SandboxAct,
    message: Option<String>,
    emoji: Option<String>,
    text: Option<String>,
) -> SandboxActRequest {
    SandboxActRequest { contact, act, message, emoji, text }
}

/// Where a contact's act went, for a person or as JSON.
fn delivered(ctx: &Context, said: SandboxSayResponse) {
    match (ctx.json, said.instance_id) {
        (true, _) => output::json(&said),
        (false, _) if said.held => say!("relay is offline: WhatsApp holds it until `relay sandbox online`."),
        (false, Some(id)) => say!("Delivered to conversation {id}."),
        (false, None) => say!("{} has no live conversation: not answered (as on WhatsApp).", said.contact),
    }
}

/// relay's own (simulated) link goes away or comes back.
async fn link(ctx: &Context, client: &crate::client::Client, online: bool, cut_short: bool) -> Result<(), CliError> {
    let state = client.sandbox_link(&crate::api::SandboxLinkRequest { online, cut_short }).await?;
    if ctx.json {
        output::json(&state);
        return Ok(());
    }
    match (state.online, state.missing) {
        (false, _) => say!("relay is offline from WhatsApp: contacts' messages wait ({} so far).", state.held),
        (true, Some(_)) if state.lost > 0 || cut_short => say!(
            "relay is back, but the catch-up was cut short: {} message(s) lost; the conversations live then say \
             their messages may be missing.",
            state.lost
        ),
        (true, _) => say!("relay is back: the catch-up handed over {} message(s).", state.delivered),
    }
    Ok(())
}

/// The file a simulated contact sends, uploaded first, with what their
/// message says of it; and a note when `--seconds` will not show, the file
/// knowing its own length.
async fn upload(
    client: &crate::client::Client,
    file: SaidFile,
    claims: FileClaims,
) -> Result<Option<(SandboxMedia, Option<String>)>, CliError> {
    let Some((kind, path)) = file.given() else { return Ok(None) };
    let plays = matches!(kind, MediaKind::VoiceNote | MediaKind::Audio | MediaKind::Video);
    if claims.seconds.is_some() && !plays {
        return Err(CliError::usage(
            "--seconds is how long a voice note, audio or video plays (--voice, --audio, --video)",
        ));
    }
    let bytes = std::fs::read(&path).map_err(|e| CliError::usage(format!("cannot read {}: {e}", path.display())))?;
    // The same reading of the bytes as the daemon's (media::intake), which wins over the claim.
    let own = claims.seconds.and_then(|said| crate::media::ogg::seconds(&bytes).filter(|own| *own != said));
    let note = own.map(|own| {
        let name = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
        let (own, said) = (crate::media::label::clock(own), claims.seconds.unwrap_or_default());
        format!(
            "{name} itself plays {own}, and relay goes by that rather than what its message claims (--seconds {said})"
        )
    });
    let uploaded = client.upload(bytes).await?;
    let file_name =
        (kind == MediaKind::Document).then(|| path.file_name().map(|n| n.to_string_lossy().into_owned())).flatten();
    let media = SandboxMedia {
        kind,
        upload_id: uploaded.upload_id,
        mime: claims.mime,
        file_name,
        seconds: claims.seconds,
        fail_downloads: claims.fail_downloads,
    };
    Ok(Some((media, note)))
}

/// Where a simulated message went, for a person or as JSON.
fn said_by(ctx: &Context, said: &SandboxSayResponse, from_operator: bool) {
    if ctx.json {
        output::json(said);
        return;
    }
    match (said.instance_id, from_operator) {
        _ if said.held => say!("relay is offline: WhatsApp holds it until `relay sandbox online`."),
        (Some(id), false) => say!("Delivered to conversation {id}."),
        (None, false) => {
            say!("{} has no live conversation: not answered, kept in unrouted.jsonl (as on WhatsApp).", said.contact)
        }
        (Some(id), true) => {
            say!("Recorded in conversation {id} as yours; it is paused until `relay resume {}`.", &id.to_string()[..8])
        }
        (None, true) => say!("{} has no live conversation: your message is not routed (as on WhatsApp).", said.contact),
    }
}
