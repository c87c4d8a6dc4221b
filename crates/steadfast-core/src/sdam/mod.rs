//! The SDAM state machine and application-error handling.
