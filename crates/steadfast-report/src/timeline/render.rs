//! Drawing a [`RunTimeline`].

use super::RunTimeline;

/// The whole page of a run.
pub fn render(timeline: &RunTimeline) -> String {
    crate::html::page(&timeline.title, &timeline.subtitle, &[])
}
