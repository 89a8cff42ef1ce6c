() => {
  // every visible text of every chart: inside the chart's box, and no two overlapping (each text
  // as the quadrilateral it covers on screen, so rotated labels are compared as drawn)
  const out = {charts: [], width: document.documentElement.clientWidth};
  const quad = t => {
    const b = t.getBBox(), m = t.getScreenCTM();
    const pts = [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]];
    return pts.map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
  };
  const shrink = (q, d) => {  // a pixel of slack: touching is not overlapping
    const cx = q.reduce((s, p) => s + p[0], 0) / 4, cy = q.reduce((s, p) => s + p[1], 0) / 4;
    return q.map(([x, y]) => { const l = Math.hypot(x - cx, y - cy) || 1; return [x - (x - cx) * d / l, y - (y - cy) * d / l]; });
  };
  const separated = (p, q) => {
    for (const poly of [p, q]) for (let i = 0; i < 4; i++) {
      const [x1, y1] = poly[i], [x2, y2] = poly[(i + 1) % 4], nx = y2 - y1, ny = x1 - x2;
      const pr = r => r.map(([x, y]) => x * nx + y * ny);
      const a = pr(p), b = pr(q);
      if (Math.max(...a) <= Math.min(...b) || Math.max(...b) <= Math.min(...a)) return true;
    }
    return false;
  };
  document.querySelectorAll("[data-testid='stVegaLiteChart']").forEach((c, ci) => {
    const box = c.getBoundingClientRect();
    const texts = [...c.querySelectorAll("svg text")]
      .filter(t => t.textContent.trim() && getComputedStyle(t).visibility !== "hidden" &&
                   Number(getComputedStyle(t).opacity) > 0 && Number(t.getAttribute("fill-opacity") ?? 1) > 0)
      .map(t => ({text: t.textContent, q: shrink(quad(t), 1)}));
    const outside = texts.filter(t => t.q.some(([x, y]) => x < box.left || x > Math.min(box.right, out.width) ||
                                                           y < box.top || y > box.bottom)).map(t => t.text);
    const overlaps = [];
    for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++)
      if (!separated(texts[i].q, texts[j].q)) overlaps.push([texts[i].text, texts[j].text]);
    const truncated = texts.filter(t => t.text.endsWith("…")).map(t => t.text);
    out.charts.push({index: ci, n: texts.length, outside, overlaps: overlaps.slice(0, 10), truncated});
  });
  return out;
}
