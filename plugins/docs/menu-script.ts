/**
 * The contextual menu's script, inlined in every page (and allowed by its hash in the page's CSP).
 * Links already work without it; it adds the copy actions (the page's Markdown from the JSON block
 * `#docs-page`, or an entry's `data-copy-text`), closes the dropdown on Escape or an outside click,
 * moves between its entries with the arrow keys, and says "Copied" on the entry and to screen readers.
 * The `assistant` entry opens the `#docs-assistant` dialog, which posts the question and writes the
 * streamed answer in as text nodes (never as HTML), then the sources as links.
 */
export const MENU_SCRIPT = String.raw`(function () {
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

  var dialog = document.getElementById('docs-assistant');
  var asking = null;

  function openAssistant() {
    if (!dialog) return;
    if (!dialog.open) dialog.showModal();
    dialog.querySelector('textarea').focus();
  }

  function showSources(sources) {
    var box = dialog.querySelector('.assistant-sources');
    var list = box.querySelector('ul');
    list.textContent = '';
    sources.forEach(function (source) {
      // Only web links; a title is text whatever it holds.
      if (!source || typeof source.url !== 'string' || !/^https?:\/\//i.test(source.url)) return;
      var item = document.createElement('li');
      var link = document.createElement('a');
      link.href = source.url;
      link.textContent = String(source.title || source.url);
      item.appendChild(link);
      list.appendChild(item);
    });
    box.hidden = list.childElementCount === 0;
  }

  // Posts the question and reads the answer's server-sent events: text deltas, sources, done or error.
  function ask(question) {
    if (asking) asking.abort();
    var controller = new AbortController();
    asking = controller;
    var answer = dialog.querySelector('.assistant-answer');
    var error = dialog.querySelector('.assistant-error');
    var button = dialog.querySelector('.assistant-ask');
    answer.textContent = '';
    error.textContent = '';
    error.hidden = true;
    showSources([]);
    button.disabled = true;
    dialog.setAttribute('data-state', 'asking');
    var ended = 'done';
    function fail(message) {
      ended = 'failed';
      error.textContent = message;
      error.hidden = false;
    }
    function finish() {
      if (asking !== controller) return;
      asking = null;
      button.disabled = false;
      dialog.setAttribute('data-state', ended);
      if (status) status.textContent = ended === 'done' ? 'The assistant answered' : 'The assistant could not answer';
    }
    function onEvent(name, data) {
      var payload;
      try { payload = JSON.parse(data); } catch (e) { return; }
      if (name === 'text' && typeof payload.delta === 'string') answer.appendChild(document.createTextNode(payload.delta));
      else if (name === 'sources' && Array.isArray(payload.sources)) showSources(payload.sources);
      else if (name === 'error') fail(String(payload.message || payload.code || 'The assistant failed'));
    }
    var buffered = '';
    function drain(flush) {
      var blocks = buffered.split('\n\n');
      buffered = flush ? '' : blocks.pop();
      blocks.forEach(function (block) {
        var name = 'message';
        var data = [];
        block.split('\n').forEach(function (line) {
          if (line.indexOf('event:') === 0) name = line.slice(6).trim();
          else if (line.indexOf('data:') === 0) data.push(line.slice(5).replace(/^ /, ''));
        });
        if (data.length) onEvent(name, data.join('\n'));
      });
    }
    fetch(dialog.getAttribute('data-endpoint'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify({ question: question, page: page.path }),
      signal: controller.signal
    }).then(function (response) {
      if (!response.ok || !response.body) {
        return response.json().then(
          function (problem) { fail(String(problem.detail || problem.title || 'The assistant could not answer')); },
          function () { fail('The assistant answered ' + response.status); }
        ).then(finish);
      }
      var reader = response.body.getReader();
      var decoder = new TextDecoder();
      function pump() {
        return reader.read().then(function (step) {
          if (step.done) {
            buffered += decoder.decode();
            drain(true);
            return finish();
          }
          buffered += decoder.decode(step.value, { stream: true }).replace(/\r\n?/g, '\n');
          drain(false);
          return pump();
        });
      }
      return pump();
    }).catch(function () {
      if (controller.signal.aborted) return;
      fail('The assistant could not be reached');
      finish();
    });
  }

  if (dialog) {
    dialog.querySelector('form').addEventListener('submit', function (event) {
      event.preventDefault();
      var question = dialog.querySelector('textarea').value.trim();
      if (question) ask(question);
    });
    dialog.querySelector('.assistant-close').addEventListener('click', function () { dialog.close(); });
    // Closing the dialog stops the answer being read.
    dialog.addEventListener('close', function () {
      if (asking) asking.abort();
      asking = null;
      dialog.querySelector('.assistant-ask').disabled = false;
    });
  }

  document.addEventListener('click', function (event) {
    var target = event.target instanceof Element ? event.target : null;
    var menu = target ? target.closest('details.menu-more') : null;
    closeMenus(menu);
    if (target && target.closest('[data-action="assistant"]')) {
      event.preventDefault();
      closeMenus(null);
      openAssistant();
      return;
    }
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
