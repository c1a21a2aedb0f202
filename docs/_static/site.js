// Boxes that scroll sideways (wide outputs, wide display formulas at phone
// width): make each reachable with the keyboard (Tab, then the arrow keys) and
// give it a name. Formulas are typeset after the page loads, so this runs again
// once MathJax is done.
function markScrollBoxes() {
  for (const box of document.querySelectorAll("div.cell_output, mjx-container[display='true']")) {
    if (box.scrollWidth > box.clientWidth + 1 && !box.hasAttribute("tabindex")) {
      box.setAttribute("tabindex", "0");
      box.setAttribute("role", "region");
      box.setAttribute("aria-label", box.matches("mjx-container") ? "formula, scrolls sideways"
                                                                  : "cell output, scrolls sideways");
    }
  }
}
document.addEventListener("DOMContentLoaded", markScrollBoxes);
window.addEventListener("load", () => {
  markScrollBoxes();
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    MathJax.startup.promise.then(markScrollBoxes);
  }
});
