"""What a dashboard page shows in a browser (Playwright): its figures drawn with data.

A figure counts as drawn with data once plotly has plotted a trace holding at least one value into its graph
(an empty state has no traces). Drawn, not visible: a steady rate is a flat line, whose trace has an empty
bounding box that Playwright's visibility check would wait on forever."""

GRAPHS = {  # sub-navigation label -> the ids of the page's graphs
    "Overview": ("overview-throughput", "overview-load"),
    "Throughput": ("throughput-brokers", "throughput-topics"),
    "Consumer lag": ("lag-chart",),
    "Partitions": ("partitions-heatmap",),
    "Disk": ("disk-history",),
}
DRAWN_WITH_DATA = """(ids) => ids.every(id => {
    const gd = document.querySelector('#' + id + ' .js-plotly-plot');
    return !!gd && (gd.data || []).some(t => [t.y, t.z].some(v => Array.isArray(v)
                                             && v.flat().some(x => x !== null && x !== undefined)))
        && gd.querySelector('.trace, .hm, .heatmaplayer image') !== null;
})"""


SHOWN = """(ids) => ids.map(id => {
    const gd = document.querySelector('#' + id + ' .js-plotly-plot');
    if (!gd) { return id + ': no plot'; }
    const title = gd.layout && gd.layout.title ? JSON.stringify(gd.layout.title.text || gd.layout.title) : '-';
    return id + ': ' + (gd.data || []).length + ' traces, ' + gd.querySelectorAll('.trace').length
        + ' drawn, title ' + title + ', annotations ' + JSON.stringify((gd.layout.annotations || []).map(a => a.text));
}).join('; ')"""


def wait_for_figures(page, name: str, timeout_s: float) -> None:
    """Until every graph of the dashboard page `name` is drawn with data; AssertionError with what each graph
    shows when `timeout_s` passes first."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(DRAWN_WITH_DATA, arg=list(GRAPHS[name]), timeout=timeout_s * 1000)
    except PlaywrightTimeout:
        shown = page.evaluate(SHOWN, list(GRAPHS[name]))
        raise AssertionError(f"{name}: figures not drawn with data within {timeout_s} s: {shown}") from None
