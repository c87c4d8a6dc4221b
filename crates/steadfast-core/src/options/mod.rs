//! Connection strings (`mongodb://`, `mongodb+srv://`) and client options.
