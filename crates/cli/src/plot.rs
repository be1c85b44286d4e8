//! PNG line charts for the CLI's `--plot` options (plotters, bitmap backend, embedded DejaVu
//! font, so no system font library is needed).

use anyhow::{Result, anyhow};
use plotters::prelude::*;
use std::path::Path;

/// One line of a chart.
pub struct Series {
    /// Legend label.
    pub name: String,
    /// (x, y) points; non-finite points (and non-positive ones on a log axis) are dropped.
    pub points: Vec<(f64, f64)>,
}

/// Axis scaling.
#[derive(Clone, Copy, Debug, Default)]
pub struct Scale {
    /// Logarithmic x axis.
    pub log_x: bool,
    /// Logarithmic y axis.
    pub log_y: bool,
}

fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // A failure here leaves text unrendered; the chart is still drawn.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular());
    });
}

fn range(values: impl Iterator<Item = f64>, log: bool) -> Option<(f64, f64)> {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if !lo.is_finite() {
        return None;
    }
    Some(if log {
        (lo / 1.5, hi * 1.5)
    } else if hi > lo {
        let pad = (hi - lo) * 0.05;
        (lo - pad, hi + pad)
    } else {
        (lo - 1.0, hi + 1.0)
    })
}

/// The legend box of a chart, upper left.
fn legend<'a, CT: CoordTranslate>(chart: &mut ChartContext<'a, BitMapBackend<'a>, CT>, path: &Path) -> Result<()> {
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(|e| anyhow!("plotting {}: {e}", path.display()))
}

/// Draws `series` as lines with markers into a 1000×600 PNG at `path`.
pub fn line_chart(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    scale: Scale,
) -> Result<()> {
    register_font();
    let keep =
        |&(x, y): &(f64, f64)| x.is_finite() && y.is_finite() && (!scale.log_x || x > 0.0) && (!scale.log_y || y > 0.0);
    let clean: Vec<(String, Vec<(f64, f64)>)> =
        series.iter().map(|s| (s.name.clone(), s.points.iter().copied().filter(keep).collect())).collect();
    let (x0, x1) = range(clean.iter().flat_map(|s| s.1.iter().map(|p| p.0)), scale.log_x)
        .ok_or_else(|| anyhow!("nothing to plot: no finite points"))?;
    let (y0, y1) = range(clean.iter().flat_map(|s| s.1.iter().map(|p| p.1)), scale.log_y)
        .ok_or_else(|| anyhow!("nothing to plot: no finite points"))?;
    let root = BitMapBackend::new(path, (1000, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("plotting {}: {e}", path.display()))?;
    let mut builder = ChartBuilder::on(&root);
    builder.caption(title, ("sans-serif", 24)).margin(15).x_label_area_size(45).y_label_area_size(75);
    macro_rules! draw {
        ($chart:expr) => {{
            let mut chart = $chart.map_err(|e| anyhow!("plotting {}: {e}", path.display()))?;
            chart
                .configure_mesh()
                .x_desc(x_label)
                .y_desc(y_label)
                .draw()
                .map_err(|e| anyhow!("plotting {}: {e}", path.display()))?;
            for (i, (name, pts)) in clean.iter().enumerate() {
                let color = Palette99::pick(i).to_rgba();
                chart
                    .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
                    .map_err(|e| anyhow!("plotting {}: {e}", path.display()))?
                    .label(name.as_str())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
                chart
                    .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
                    .map_err(|e| anyhow!("plotting {}: {e}", path.display()))?;
            }
            if clean.len() > 1 {
                legend(&mut chart, path)?;
            }
        }};
    }
    match (scale.log_x, scale.log_y) {
        (false, false) => draw!(builder.build_cartesian_2d(x0..x1, y0..y1)),
        (true, false) => draw!(builder.build_cartesian_2d((x0..x1).log_scale(), y0..y1)),
        (false, true) => draw!(builder.build_cartesian_2d(x0..x1, (y0..y1).log_scale())),
        (true, true) => draw!(builder.build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())),
    }
    root.present().map_err(|e| anyhow!("writing {}: {e}", path.display()))?;
    Ok(())
}

/// A shaded band between two curves (the same x values, in order).
pub struct Band {
    /// Legend label.
    pub name: String,
    /// Lower curve.
    pub lo: Vec<(f64, f64)>,
    /// Upper curve.
    pub hi: Vec<(f64, f64)>,
    /// Fill opacity (0..1).
    pub opacity: f64,
}

/// Draws `bands` as shaded areas, then `lines` on top (thin grey lines for unnamed series, a
/// thick labelled line for named ones) into a 1000×600 PNG at `path`.
pub fn fan_chart(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    bands: &[Band],
    lines: &[Series],
) -> Result<()> {
    register_font();
    let finite = |p: &&(f64, f64)| p.0.is_finite() && p.1.is_finite();
    let all =
        bands.iter().flat_map(|b| b.lo.iter().chain(&b.hi)).chain(lines.iter().flat_map(|s| &s.points)).filter(finite);
    let (x0, x1) =
        range(all.clone().map(|p| p.0), false).ok_or_else(|| anyhow!("nothing to plot: no finite points"))?;
    let (y0, y1) = range(all.map(|p| p.1), false).ok_or_else(|| anyhow!("nothing to plot: no finite points"))?;
    let root = BitMapBackend::new(path, (1000, 600)).into_drawing_area();
    let err = |e: &dyn std::fmt::Display| anyhow!("plotting {}: {e}", path.display());
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 24))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(75)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(|e| err(&e))?;
    chart.configure_mesh().x_desc(x_label).y_desc(y_label).draw().map_err(|e| err(&e))?;
    let blue = RGBColor(31, 119, 180);
    for b in bands {
        let poly: Vec<(f64, f64)> = b.lo.iter().chain(b.hi.iter().rev()).copied().filter(|p| finite(&p)).collect();
        let style = blue.mix(b.opacity).filled();
        chart
            .draw_series(std::iter::once(Polygon::new(poly, style)))
            .map_err(|e| err(&e))?
            .label(b.name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 20, y + 5)], style));
    }
    for s in lines {
        let pts: Vec<(f64, f64)> = s.points.iter().filter(finite).copied().collect();
        if s.name.is_empty() {
            chart.draw_series(LineSeries::new(pts, BLACK.mix(0.45).stroke_width(1))).map_err(|e| err(&e))?;
        } else {
            let red = RGBColor(214, 39, 40);
            chart
                .draw_series(LineSeries::new(pts, red.stroke_width(3)))
                .map_err(|e| err(&e))?
                .label(s.name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], red.stroke_width(3)));
        }
    }
    legend(&mut chart, path)?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_png_and_refuses_empty_data() {
        let dir = std::env::temp_dir().join(format!("lockstep-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.png");
        let s = vec![
            Series { name: "a".into(), points: (1..8).map(|k| (10f64.powi(k), k as f64)).collect() },
            Series { name: "b".into(), points: vec![(1.0, f64::NAN), (10.0, 2.0), (100.0, 3.0)] },
        ];
        line_chart(&path, "t", "x", "y", &s, Scale { log_x: true, log_y: true }).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[1..4], b"PNG");
        let empty = vec![Series { name: "e".into(), points: vec![(f64::NAN, 1.0)] }];
        assert!(line_chart(&path, "t", "x", "y", &empty, Scale::default()).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
