/* Draws the page's figure (JSON in #figure-data) into #timeline with plotly.js, then:
   - band labels: after every draw, zoom, pan or resize only the labels that fit are shown, greedily left
     to right by pixel x in up to `label_rows` rows above the plot; the others are hidden (each band's hover
     says the same), so two labels never overlap at any zoom;
   - lanes: hovering a lane's name (left of the plot) shows its title (every id of the lane); where the
     figure gives links (the overview), a click on a lane's name or row opens its page, and a click on a
     point opens the point's own link (a rebalance's row, a finding's). */
(function () {
  var source = document.getElementById('figure-data'), el = document.getElementById('timeline');
  if (!source || !el || typeof Plotly === 'undefined') return;
  var fig = JSON.parse(source.textContent), lanes = fig.lanes || {};
  var titles = lanes.titles || [], links = lanes.links || [];
  var ROWS = fig.label_rows || 2, ROW_PX = fig.label_row_px || 16, GAP = 8;
  var ctx = document.createElement('canvas').getContext('2d');

  function labelWidth(a, fl) {
    var font = a.font || {};
    ctx.font = (font.size || 10) + 'px ' + (font.family || fl.font.family);
    return Math.ceil(ctx.measureText(a.text).width) + 4;
  }

  /* Which band labels are shown, on which row and how far shifted left (to end inside the plot). */
  function layoutLabels() {
    var fl = el._fullLayout, anns = (el.layout && el.layout.annotations) || [];
    if (!fl || !fl.xaxis) return {};
    var xa = fl.xaxis, left = xa._offset, right = xa._offset + xa._length, ends = [], out = {};
    var order = [];
    anns.forEach(function (a, i) {
      if (a.name === 'band') order.push({ i: i, x: left + xa.l2p(xa.d2l(a.x)), w: labelWidth(a, fl) });
    });
    order.sort(function (p, q) { return p.x - q.x || p.i - q.i; });
    order.forEach(function (p) {
      var x0 = Math.min(p.x, right - p.w), place = null;
      if (p.x >= left - 0.5 && p.x <= right + 0.5 && x0 >= left - 0.5) {
        for (var r = 0; r < ROWS; r++) {
          if (ends[r] === undefined || x0 >= ends[r] + GAP) {
            ends[r] = x0 + p.w;
            place = { row: r, shift: Math.round(x0 - p.x) };
            break;
          }
        }
      }
      out[p.i] = place;
    });
    return out;
  }

  function placeLabels() {
    var anns = (el.layout && el.layout.annotations) || [], placed = layoutLabels(), update = {}, n = 0;
    var shown = 0;
    Object.keys(placed).forEach(function (i) {
      var a = anns[i], p = placed[i], on = p !== null;
      if (on) shown++;
      if ((a.visible !== false) !== on) { update['annotations[' + i + '].visible'] = on; n++; }
      if (on && (a.yshift || 0) !== p.row * ROW_PX) { update['annotations[' + i + '].yshift'] = p.row * ROW_PX; n++; }
      if (on && (a.xshift || 0) !== p.shift) { update['annotations[' + i + '].xshift'] = p.shift; n++; }
    });
    var done = function () { el.setAttribute('data-labels', String(shown)); };
    if (!n) { done(); return; }
    Plotly.relayout(el, update).then(done);
  }

  var queued = false;
  function schedule() {
    if (queued) return;
    queued = true;
    requestAnimationFrame(function () { queued = false; placeLabels(); });
  }

  /* The lane under a mouse event (-1: none); `inPlot`: the plot area counts too, not only the names. */
  function laneAt(e, inPlot) {
    var fl = el._fullLayout;
    if (!fl || !fl.yaxis || !fl.xaxis) return -1;
    var box = el.getBoundingClientRect(), px = e.clientX - box.left, py = e.clientY - box.top;
    var xa = fl.xaxis, ya = fl.yaxis;
    if (px < 0 || px > (inPlot ? xa._offset + xa._length : xa._offset)) return -1;
    if (py < ya._offset || py > ya._offset + ya._length) return -1;
    var lane = Math.round(ya.p2l(py - ya._offset));
    return lane >= 0 && lane < titles.length ? lane : -1;
  }

  var tip = document.createElement('div');
  tip.id = 'rr-tip';
  document.body.appendChild(tip);
  function hideTip() { tip.style.display = 'none'; el.style.cursor = ''; }
  el.addEventListener('mousemove', function (e) {
    var lane = e.target.closest && e.target.closest('.modebar, .legend') ? -1 : laneAt(e, false);
    if (lane < 0 || !titles[lane]) { hideTip(); return; }
    tip.textContent = titles[lane] + (links[lane] ? '\n(click to open its page)' : '');
    tip.style.display = 'block';
    var x = Math.min(e.clientX + 14, document.documentElement.clientWidth - tip.offsetWidth - 4);
    var y = e.clientY + 16;
    if (y + tip.offsetHeight > document.documentElement.clientHeight) y = e.clientY - tip.offsetHeight - 8;
    tip.style.left = Math.max(0, x) + 'px';
    tip.style.top = Math.max(0, y) + 'px';
    el.style.cursor = links[lane] ? 'pointer' : '';
  });
  el.addEventListener('mouseleave', hideTip);

  var down = null, leaving = false;
  function go(href) { if (href && !leaving) { leaving = true; window.location.href = href; } }
  if (links.length) {
    el.addEventListener('mousedown', function (e) { down = [e.clientX, e.clientY]; }, true);
    el.addEventListener('click', function (e) {
      if (e.target.closest && e.target.closest('.modebar, .legend')) return;
      if (down && Math.abs(e.clientX - down[0]) + Math.abs(e.clientY - down[1]) > 4) return;
      var lane = laneAt(e, true);
      // a point's own link (plotly_click) goes first
      if (lane >= 0) setTimeout(function () { go(links[lane]); }, 0);
    });
  }

  var t0 = performance.now();
  var config = { responsive: true, displaylogo: false, scrollZoom: fig.scroll_zoom !== false };
  Plotly.newPlot(el, fig.data, fig.layout, config).then(function () {
    el.setAttribute('data-plot-ms', String(Math.round(performance.now() - t0)));
    el.setAttribute('data-rendered', String(Math.round(performance.now())));
    el.on('plotly_afterplot', schedule);
    el.on('plotly_relayout', schedule);
    el.on('plotly_click', function (ev) {
      var p = ev && ev.points && ev.points[0];
      if (p && typeof p.customdata === 'string') go(p.customdata);
    });
    schedule();
  });
  window.addEventListener('beforeprint', function () { Plotly.relayout(el, { width: 1000 }); });
  window.addEventListener('afterprint', function () { Plotly.relayout(el, { width: null }); });
})();
