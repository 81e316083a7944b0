//! The unit tests' `tracing` subscriber: it keeps every event, each as one line.

use std::{
    fmt,
    sync::{Arc, Mutex},
};

/// Collects every event: its target, level, and a line of its message followed by
/// its fields as ` name=value`.
#[derive(Clone, Default)]
pub(crate) struct Events(Arc<Mutex<Vec<(String, tracing::Level, String)>>>);

impl Events {
    /// Each event's line.
    pub(crate) fn lines(&self) -> Vec<String> {
        crate::sync::lock(&self.0)
            .iter()
            .map(|(_, _, line)| line.clone())
            .collect()
    }

    /// Each event as `TARGET LEVEL LINE` (a line without a message starts with its
    /// fields' space).
    pub(crate) fn with_targets(&self) -> Vec<String> {
        crate::sync::lock(&self.0)
            .iter()
            .map(|(target, level, line)| format!("{target} {level}{line}"))
            .collect()
    }
}

impl tracing::Subscriber for Events {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Line(String);
        impl tracing::field::Visit for Line {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn fmt::Debug) {
                if field.name() == "message" {
                    self.0.insert_str(0, &format!("{value:?}"));
                } else {
                    self.0.push_str(&format!(" {}={value:?}", field.name()));
                }
            }
        }
        let mut line = Line(String::new());
        event.record(&mut line);
        let metadata = event.metadata();
        crate::sync::lock(&self.0).push((metadata.target().to_owned(), *metadata.level(), line.0));
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}
