//! Server and topology descriptions: immutable values describing what the driver knows.
