//! The unit tests' `tracing` subscriber: it keeps every event, each as one line.

use std::{
    fmt,
    sync::{Arc, Mutex, Once},
};

/// Collects every event: its target, level, and a line of its message followed by
/// its fields as ` name=value`.
#[derive(Clone)]
pub(crate) struct Events(Arc<Mutex<Vec<(String, tracing::Level, String)>>>);

impl Default for Events {
    /// A new collector, set as a thread's subscriber by its test.
    ///
    /// Tests run side by side, so the first time a callsite is reached may be on
    /// another test's thread, one without a subscriber. While at most one
    /// subscriber is registered, `tracing` then asks only that thread's subscriber
    /// (the global no-op) whether the callsite is of interest, and caches its
    /// "never" for every thread until the next subscriber is registered: this
    /// collector would miss the callsite's events. A global subscriber that answers
    /// "sometimes" keeps every callsite asking the current thread's subscriber,
    /// event by event.
    fn default() -> Self {
        static UNDECIDED: Once = Once::new();
        UNDECIDED.call_once(|| {
            tracing::subscriber::set_global_default(Undecided)
                .expect("only the test events set the unit tests' global subscriber");
        });
        Self(Arc::default())
    }
}

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

/// The unit tests' global subscriber: it keeps nothing, and leaves every callsite's
/// interest to be asked of the current thread's subscriber.
struct Undecided;

impl tracing::Subscriber for Undecided {
    fn register_callsite(
        &self,
        _: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        tracing::subscriber::Interest::sometimes()
    }
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        false
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

mod tests {
    use super::*;

    #[test]
    fn an_event_is_kept_though_its_callsite_was_first_reached_on_a_thread_without_a_subscriber() {
        fn warn() {
            tracing::warn!("reached");
        }
        let events = Events::default();
        let _default = tracing::subscriber::set_default(events.clone());
        std::thread::spawn(warn).join().unwrap();
        warn();
        assert_eq!(events.lines(), ["reached"]);
    }
}
