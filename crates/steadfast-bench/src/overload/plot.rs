//! The overload cell's plot: goodput against offered load, one line per contender, with the
//! capacity as a reference line.

use std::path::Path;

use plotters::prelude::*;

use super::{LOADS, OverloadCell, Policy};
use crate::BenchError;

const COLORS: [RGBColor; 3] = [
    RGBColor(200, 60, 40),
    RGBColor(30, 120, 60),
    RGBColor(40, 80, 200),
];

/// Writes the SVG to `path`.
///
/// # Errors
/// The file cannot be written.
pub(super) fn write(cells: &[OverloadCell], capacity: f64, path: &Path) -> Result<(), BenchError> {
    let max_load = LOADS.iter().copied().fold(0.0, f64::max);
    let top = cells.iter().map(|c| c.goodput).fold(capacity, f64::max) * 1.15;
    let root = SVGBackend::new(path, (800, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("Goodput under overload (capacity {capacity:.0} ops/s)"),
            ("sans-serif", 20),
        )
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..max_load * capacity * 1.05, 0.0..top)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("offered load (requests/s)")
        .y_desc("goodput (successful ops/s)")
        .draw()
        .map_err(|e| e.to_string())?;
    chart
        .draw_series(LineSeries::new(
            [(0.0, capacity), (max_load * capacity * 1.05, capacity)],
            BLACK.mix(0.4),
        ))
        .map_err(|e| e.to_string())?
        .label("capacity")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLACK.mix(0.4)));
    for (policy, color) in Policy::ALL.into_iter().zip(COLORS) {
        let points: Vec<(f64, f64)> = cells
            .iter()
            .filter(|c| c.driver == policy.label())
            .map(|c| (c.offered, c.goodput))
            .collect();
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
            .map_err(|e| e.to_string())?
            .label(policy.label())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color.stroke_width(2)));
        chart
            .draw_series(
                points
                    .into_iter()
                    .map(|p| Circle::new(p, 3, color.filled())),
            )
            .map_err(|e| e.to_string())?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}
