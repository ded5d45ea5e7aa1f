//! Small shared helpers.

use std::future::Future;
use std::pin::Pin;

/// A boxed future, for the async methods of the `Channel`, `Agent` and
/// `InboundSink` traits (which are used as trait objects).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
