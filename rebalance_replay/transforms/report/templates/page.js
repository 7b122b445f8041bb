/* Every page's script:
   - a click (or Enter) on an element with data-copy copies its text: the Clipboard API where the page may
     use it, else a hidden textarea and document.execCommand('copy') (file:// pages, older browsers); a
     short "copied" cue either way;
   - a link to a row folded under "+N more" (<details>) opens the fold. */
(function () {
  function cue(el, ok) {
    el.classList.add('copied');
    el.classList.toggle('copy-failed', !ok);
    clearTimeout(el.rrCue);
    el.rrCue = setTimeout(function () { el.classList.remove('copied', 'copy-failed'); }, 1200);
  }
  function byHand(text) {
    var before = document.activeElement, ta = document.createElement('textarea'), ok = false;
    ta.value = text;
    ta.setAttribute('readonly', '');
    ta.setAttribute('aria-hidden', 'true');
    ta.style.cssText = 'position:fixed;top:0;left:0;width:1px;height:1px;opacity:0;border:0;padding:0';
    document.body.appendChild(ta);
    ta.select();
    try { ok = document.execCommand('copy'); } catch (e) { ok = false; }
    document.body.removeChild(ta);
    if (before && before.focus) before.focus();
    return ok;
  }
  function copy(el) {
    var text = el.getAttribute('data-copy') || '';
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(
        function () { cue(el, true); },
        function () { cue(el, byHand(text)); });
    } else {
      cue(el, byHand(text));
    }
  }
  function target(e) { return e.target && e.target.closest ? e.target.closest('[data-copy]') : null; }
  document.addEventListener('click', function (e) {
    var el = target(e);
    if (el) { e.preventDefault(); copy(el); }
  });
  document.addEventListener('keydown', function (e) {
    var el = (e.key === 'Enter' || e.key === ' ') ? target(e) : null;
    if (el) { e.preventDefault(); copy(el); }
  });
  function unfold() {
    var id = decodeURIComponent(window.location.hash.slice(1)), el = id && document.getElementById(id);
    var fold = el && el.closest ? el.closest('details') : null;
    if (fold && !fold.open) { fold.open = true; el.scrollIntoView(); }
  }
  window.addEventListener('hashchange', unfold);
  unfold();
})();
