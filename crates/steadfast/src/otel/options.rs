//! [`OpentelemetryOptions`]: a client's OpenTelemetry settings, shaped as the official driver's.

use std::fmt;
use std::sync::Arc;

use opentelemetry::global::ObjectSafeTracerProvider;
use opentelemetry::trace::{Span, Tracer, TracerProvider};
use typed_builder::TypedBuilder;

/// A client's OpenTelemetry settings
/// ([`ClientOptions::tracing`](crate::options::ClientOptions::tracing)); see the
/// [module documentation](crate::otel).
#[derive(Clone, Default, TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct OpentelemetryOptions {
    /// Turns the client's spans on or off. Default: the environment variable
    /// `OTEL_RUST_INSTRUMENTATION_MONGODB_ENABLED` (`1`, `true` or `yes` turn them on), else
    /// off.
    pub enabled: Option<bool>,
    /// The longest `db.query.text` (the command sent, as relaxed Extended JSON) of a command
    /// span, in bytes; 0 leaves the attribute out. Default: the environment variable
    /// `OTEL_RUST_INSTRUMENTATION_MONGODB_QUERY_TEXT_MAX_LENGTH`, else 0.
    pub query_text_max_length: Option<usize>,
    /// The tracer provider the client's spans go to. Default: OpenTelemetry's global one.
    #[builder(setter(
        transform = |provider: impl TracerProvider<Tracer = impl Tracer<Span = impl Span + Send + Sync + 'static> + Send + Sync + 'static> + Send + Sync + 'static|
            Some(Arc::new(provider) as Arc<dyn ObjectSafeTracerProvider + Send + Sync>)
    ))]
    pub tracer_provider: Option<Arc<dyn ObjectSafeTracerProvider + Send + Sync>>,
}

impl fmt::Debug for OpentelemetryOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpentelemetryOptions")
            .field("enabled", &self.enabled)
            .field("query_text_max_length", &self.query_text_max_length)
            .field("tracer_provider", &self.tracer_provider.is_some())
            .finish()
    }
}
