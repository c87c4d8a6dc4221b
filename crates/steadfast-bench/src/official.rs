//! The official `mongodb` crate as a contender.

crate::contender::contender!(OfficialSide, mongodb, "official");
