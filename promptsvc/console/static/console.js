// promptsvc console: progressive enhancement only. Every flow works without this file.
// Copy buttons: <button data-copy="ID" hidden> copies the text of the element #ID.
"use strict";

function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    return navigator.clipboard.writeText(text);
  }
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.className = "offscreen";
  document.body.appendChild(area);
  area.select();
  const ok = document.execCommand("copy");
  document.body.removeChild(area);
  return ok ? Promise.resolve() : Promise.reject(new Error("copy refused"));
}

document.querySelectorAll("button[data-copy]").forEach(function (button) {
  const source = document.getElementById(button.dataset.copy);
  if (!source) {
    return;
  }
  const label = button.textContent;
  button.hidden = false;
  button.addEventListener("click", function () {
    copyText(source.textContent.trim()).then(
      function () { button.textContent = "Copied"; },
      function () { button.textContent = "Select and copy"; }
    );
    setTimeout(function () { button.textContent = label; }, 2000);
  });
});
