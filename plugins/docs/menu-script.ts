/**
 * The contextual menu's script, inlined in every page (and allowed by its hash in the page's CSP).
 * Links already work without it; it adds the copy actions (the page's Markdown from the JSON block
 * `#docs-page`, or an entry's `data-copy-text`), closes the dropdown on Escape or an outside click,
 * moves between its entries with the arrow keys, and says "Copied" on the entry and to screen readers.
 */
export const MENU_SCRIPT = `(function () {
  'use strict';
  var dataBlock = document.getElementById('docs-page');
  var page = dataBlock ? JSON.parse(dataBlock.textContent || '{}') : {};
  var status = document.getElementById('docs-menu-status');

  function closeMenus(except) {
    document.querySelectorAll('details.menu-more[open]').forEach(function (menu) {
      if (menu !== except) menu.removeAttribute('open');
    });
  }

  // navigator.clipboard needs a secure context; plain http falls back to a selected textarea.
  function writeClipboard(text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    return new Promise(function (resolve, reject) {
      var area = document.createElement('textarea');
      area.value = text;
      area.setAttribute('readonly', '');
      area.style.position = 'fixed';
      area.style.opacity = '0';
      document.body.appendChild(area);
      area.select();
      var ok = false;
      try { ok = document.execCommand('copy'); } catch (e) { ok = false; }
      document.body.removeChild(area);
      if (ok) resolve(); else reject(new Error('copy refused'));
    });
  }

  function report(item, state, message) {
    item.setAttribute('data-state', state);
    if (status) status.textContent = message;
    setTimeout(function () { item.removeAttribute('data-state'); }, 2000);
  }

  document.addEventListener('click', function (event) {
    var target = event.target instanceof Element ? event.target : null;
    var menu = target ? target.closest('details.menu-more') : null;
    closeMenus(menu);
    var item = target ? target.closest('[data-copy]') : null;
    if (!item) {
      if (target && target.closest('.menu-item')) closeMenus(null);
      return;
    }
    event.preventDefault();
    var text = item.getAttribute('data-copy') === 'page' ? page.markdown : item.getAttribute('data-copy-text');
    if (typeof text !== 'string') return;
    writeClipboard(text).then(
      function () { report(item, 'copied', 'Copied to the clipboard'); },
      function () { report(item, 'failed', 'Could not copy to the clipboard'); }
    );
  });

  // Escape closes the open dropdown; the arrow keys, Home and End move between its entries.
  document.addEventListener('keydown', function (event) {
    var open = document.querySelector('details.menu-more[open]');
    if (!open) return;
    var summary = open.querySelector('summary');
    if (event.key === 'Escape') {
      open.removeAttribute('open');
      if (summary) summary.focus();
      return;
    }
    var items = Array.prototype.slice.call(open.querySelectorAll('.menu-item'));
    if (items.length === 0) return;
    var at = items.indexOf(document.activeElement);
    var next = -1;
    if (event.key === 'ArrowDown') next = at < 0 ? 0 : (at + 1) % items.length;
    else if (event.key === 'ArrowUp') next = at < 0 ? items.length - 1 : (at - 1 + items.length) % items.length;
    else if (event.key === 'Home') next = 0;
    else if (event.key === 'End') next = items.length - 1;
    if (next < 0) return;
    event.preventDefault();
    items[next].focus();
  });
})();
`
