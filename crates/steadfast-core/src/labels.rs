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

    /// How many labels the set holds.
    pub fn len(&self) -> usize {
        // At most 8 bits are set: the count always fits.
        self.known.count_ones() as usize + self.other.len()
    }

    /// Every label, sorted by name.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            labels: self,
            next_known: 0,
            next_other: 0,
        }
    }
}

/// The labels of an [`ErrorLabels`], each once, sorted by name.
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    labels: &'a ErrorLabels,
    /// Position in [`Label::ALL`] of the next known label to consider.
    next_known: usize,
    /// Position in `other` of the next unknown label.
    next_other: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let known = Label::ALL
            .get(self.next_known..)
            .and_then(|rest| rest.iter().position(|l| self.labels.has(*l)))
            .map(|offset| self.next_known + offset);
        let other = self.labels.other.get(self.next_other).map(String::as_str);
        match (known, other) {
            (Some(at), Some(name)) if name < Label::ALL[at].as_str() => {
                self.next_other += 1;
                Some(name)
            }
            (Some(at), _) => {
                self.next_known = at + 1;
                Some(Label::ALL[at].as_str())
            }
            (None, name) => {
                self.next_other += usize::from(name.is_some());
                name
            }
        }
    }
}

impl<'a> IntoIterator for &'a ErrorLabels {
    type Item = &'a str;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
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
        assert_eq!(labels.len(), 5);
        assert_eq!((&labels).into_iter().count(), 5);
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
