//! Noticing every panic in the process while a run goes on, including those in the driver's
//! and blackpipe's own tasks, which the run does not join.

use std::sync::{Arc, Mutex, PoisonError};

/// Records panic messages until [`PanicWatch::finish`]; the previous hook still runs, so
/// panics are printed as usual.
pub(crate) struct PanicWatch {
    messages: Arc<Mutex<Vec<String>>>,
}

impl PanicWatch {
    /// Installs the recording hook.
    pub(crate) fn install() -> PanicWatch {
        let messages = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&messages);
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let thread = std::thread::current()
                .name()
                .unwrap_or("unnamed thread")
                .to_owned();
            let message = format!("{info} (on {thread})").replace('\n', " ");
            sink.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(message);
            previous(info);
        }));
        PanicWatch { messages }
    }

    /// Restores the default hook and returns the panics seen.
    pub(crate) fn finish(self) -> Vec<String> {
        drop(std::panic::take_hook());
        std::mem::take(&mut *self.messages.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

#[cfg(test)]
mod tests {
    use super::PanicWatch;

    #[test]
    fn a_panic_on_another_thread_is_recorded() {
        let watch = PanicWatch::install();
        let joined = std::thread::Builder::new()
            .name("doomed".into())
            .spawn(|| panic!("on purpose"))
            .expect("thread starts")
            .join();
        let seen = watch.finish();
        assert!(joined.is_err());
        // Other tests run in this process meanwhile: look for ours only.
        let ours: Vec<&String> = seen.iter().filter(|m| m.contains("on purpose")).collect();
        assert_eq!(ours.len(), 1, "{seen:?}");
        assert!(ours[0].contains("doomed"), "{seen:?}");
    }
}
