//! WhatsApp.
pub mod inbound;
pub mod jid;
pub mod pacing;
pub mod qr;
pub mod state;
pub struct WhatsappChannel;
