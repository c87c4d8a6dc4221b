//! Unit tests of the store, by area.
