import { relativeText } from './format.js';

/**
 * The dashboard's only script, served as `/dashboard/assets/app.js`: it reveals and wires the Copy buttons
 * (`<button data-copy="ID" hidden>`), reloads a page that asks for it (`<body data-refresh-seconds>`: a batch
 * still running) unless a confirmation is open, and writes beside each time (`<time data-ago>`) how long ago it was, kept
 * current every 10 s (`relativeText` of format.ts, the same words the server would use). Without it the key stays in
 * a read-only field to select and copy by hand, and each time shows only its exact UTC form.
 */
export const dashboardScript = `(function () {
  'use strict';
  var relativeText = ${relativeText.toString()};
  var times = document.querySelectorAll('time[data-ago]');
  var agos = Array.prototype.map.call(times, function (time) {
    var ago = document.createElement('span');
    ago.className = 'ago';
    time.setAttribute('title', time.textContent);
    time.insertAdjacentElement('afterend', ago);
    return { at: Date.parse(time.getAttribute('datetime')), ago: ago };
  });
  function sayAgo() {
    var now = Date.now();
    agos.forEach(function (one) { one.ago.textContent = ' (' + relativeText(one.at, now) + ')'; });
  }
  sayAgo();
  if (agos.length > 0) setInterval(sayAgo, 10000);
  // A page of work still running reloads itself, but never under a confirmation the visitor has opened.
  var refresh = Number(document.body.getAttribute('data-refresh-seconds'));
  function reloadWhenIdle() {
    if (document.querySelector('details[open]') || document.hidden) setTimeout(reloadWhenIdle, 1000);
    else window.location.reload();
  }
  if (refresh > 0) setTimeout(reloadWhenIdle, refresh * 1000);
  function copyFrom(field) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(field.value);
    field.focus();
    field.select();
    return document.execCommand('copy') ? Promise.resolve() : Promise.reject(new Error('copy refused'));
  }
  var buttons = document.querySelectorAll('button[data-copy]');
  Array.prototype.forEach.call(buttons, function (button) {
    var field = document.getElementById(button.getAttribute('data-copy'));
    var status = document.getElementById(button.getAttribute('data-copy') + '-status');
    if (!field) return;
    button.hidden = false;
    field.addEventListener('focus', function () { field.select(); });
    button.addEventListener('click', function () {
      copyFrom(field).then(function () {
        if (status) status.textContent = 'Copied.';
      }, function () {
        field.focus();
        field.select();
        if (status) status.textContent = 'Press Ctrl+C (or Cmd+C) to copy.';
      });
    });
  });
})();
`;
