//! Error labels as a small set: the labels the driver reads are bits, any other label the
//! server sends is kept as a string. Copying the set of a typical error copies no string.

use std::fmt;

/// The labels the driver reads or attaches, in the order of their names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Label {
    /// No attempt of a write modified data (retryable writes).
    NoWritesPerformed,
    /// The server considers the command safe to retry (client backpressure).
    RetryableError,
    /// A retryable write may retry after this error with the same `txnNumber`.
    RetryableWriteError,
    /// The server shed load (client backpressure).
    SystemOverloadedError,
    /// The whole transaction may be retried.
    TransientTransactionError,
    /// A commit whose outcome is unknown.
    UnknownTransactionCommitResult,
}

impl Label {
    /// Every known label, in the order of their names.
    pub const ALL: [Label; 6] = [
        Label::NoWritesPerformed,
        Label::RetryableError,
        Label::RetryableWriteError,
        Label::SystemOverloadedError,
        Label::TransientTransactionError,
        Label::UnknownTransactionCommitResult,
    ];

    /// The label as the server spells it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Label::NoWritesPerformed => "NoWritesPerformed",
            Label::RetryableError => "RetryableError",
            Label::RetryableWriteError => "RetryableWriteError",
            Label::SystemOverloadedError => "SystemOverloadedError",
            Label::TransientTransactionError => "TransientTransactionError",
            Label::UnknownTransactionCommitResult => "UnknownTransactionCommitResult",
        }
    }

    /// The known label named `name`, if it is one.
    pub fn from_name(name: &str) -> Option<Label> {
        Label::ALL.into_iter().find(|l| l.as_str() == name)
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// A set of error labels. Iteration yields every label once, sorted by name.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct ErrorLabels {
    known: u8,
    /// Labels the driver does not read, sorted and without duplicates.
    other: Vec<String>,
}

impl ErrorLabels {
    /// No labels.
    pub fn new() -> Self {
        ErrorLabels::default()
    }

    /// Adds a known label.
    pub fn insert(&mut self, label: Label) {
        self.known |= label.bit();
    }

    /// Adds a label by name (idempotent).
    pub fn insert_name(&mut self, name: &str) {
        match Label::from_name(name) {
            Some(label) => self.insert(label),
            None => {
                if let Err(at) = self.other.binary_search_by(|o| o.as_str().cmp(name)) {
                    self.other.insert(at, name.to_string());
                }
            }
        }
    }

    /// Adds every label of `labels`.
    pub fn union(&mut self, labels: &ErrorLabels) {
        self.known |= labels.known;
        for name in &labels.other {
            self.insert_name(name);
        }
    }

    /// Whether the set holds the known `label`.
    pub fn has(&self, label: Label) -> bool {
        self.known & label.bit() != 0
    }

    /// Whether the set holds the label named `name`.
    pub fn contains(&self, name: &str) -> bool {
        match Label::from_name(name) {
            Some(label) => self.has(label),
            None => self
                .other
                .binary_search_by(|o| o.as_str().cmp(name))
                .is_ok(),
        }
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.known == 0 && self.other.is_empty()
    }

    /// Every label, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        let mut known = Label::ALL
            .into_iter()
            .filter(|l| self.has(*l))
            .map(Label::as_str)
            .peekable();
        let mut other = self.other.iter().map(String::as_str).peekable();
        std::iter::from_fn(move || match (known.peek(), other.peek()) {
            (Some(k), Some(o)) if o < k => other.next(),
            (Some(_), _) => known.next(),
            (None, _) => other.next(),
        })
    }
}

impl<S: AsRef<str>> FromIterator<S> for ErrorLabels {
    fn from_iter<I: IntoIterator<Item = S>>(names: I) -> Self {
        let mut labels = ErrorLabels::new();
        labels.extend(names);
        labels
    }
}

impl<S: AsRef<str>> Extend<S> for ErrorLabels {
    fn extend<I: IntoIterator<Item = S>>(&mut self, names: I) {
        for name in names {
            self.insert_name(name.as_ref());
        }
    }
}

impl fmt::Debug for ErrorLabels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_names_map_to_their_labels() {
        for label in Label::ALL {
            assert_eq!(Label::from_name(label.as_str()), Some(label));
        }
        assert_eq!(Label::from_name("retryableWriteError"), None);
    }

    #[test]
    fn known_labels_are_listed_in_name_order() {
        let names: Vec<&str> = Label::ALL.into_iter().map(Label::as_str).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
    }

    #[test]
    fn iteration_merges_known_and_other_labels_sorted_without_duplicates() {
        let labels: ErrorLabels = [
            "Zeta",
            "RetryableWriteError",
            "Alpha",
            "Alpha",
            "RetryableWriteError",
            "SystemOverloadedError",
            "Omega",
        ]
        .into_iter()
        .collect();
        assert_eq!(
            labels.iter().collect::<Vec<_>>(),
            [
                "Alpha",
                "Omega",
                "RetryableWriteError",
                "SystemOverloadedError",
                "Zeta"
            ]
        );
    }

    #[test]
    fn contains_answers_for_known_and_other_labels() {
        let mut labels = ErrorLabels::new();
        assert!(labels.is_empty());
        labels.insert(Label::NoWritesPerformed);
        labels.insert_name("Custom");
        assert!(labels.has(Label::NoWritesPerformed));
        assert!(labels.contains("NoWritesPerformed"));
        assert!(labels.contains("Custom"));
        assert!(!labels.contains("RetryableError"));
        assert!(!labels.contains("custom"));
        assert!(!labels.is_empty());
    }

    #[test]
    fn union_adds_both_kinds() {
        let mut a: ErrorLabels = ["RetryableError", "B"].into_iter().collect();
        let b: ErrorLabels = ["SystemOverloadedError", "A", "B"].into_iter().collect();
        a.union(&b);
        assert_eq!(
            a.iter().collect::<Vec<_>>(),
            ["A", "B", "RetryableError", "SystemOverloadedError"]
        );
    }
}
