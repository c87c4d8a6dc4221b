//! Unit tests of the report's data: bins, downsampling, spans, colours.
