//! WhatsApp.
pub struct WhatsappChannel;
