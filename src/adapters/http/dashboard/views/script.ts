/**
 * The dashboard's only script, served as `/dashboard/assets/app.js`: it reveals and wires the Copy buttons
 * (`<button data-copy="ID" hidden>`). Without it the key stays in a read-only field to select and copy by hand.
 */
export const dashboardScript = `(function () {
  'use strict';
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
