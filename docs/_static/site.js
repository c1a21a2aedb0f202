// Boxes that scroll sideways (wide outputs, wide display formulas at phone
// width): make each reachable with the keyboard (Tab, then the arrow keys) and
// give it a name of its own (regions that share a name cannot be told apart:
// "formula 2, scrolls sideways"). Formulas are typeset after the page loads, so
// this runs again once MathJax is done.
function markScrollBoxes() {
  const count = {formula: 0, "cell output": 0};
  for (const box of document.querySelectorAll("[data-scroll-box]")) {
    count[box.dataset.scrollBox] += 1;
  }
  for (const box of document.querySelectorAll("div.cell_output, mjx-container[display='true']")) {
    if (box.scrollWidth > box.clientWidth + 1 && !box.hasAttribute("tabindex")) {
      const kind = box.matches("mjx-container") ? "formula" : "cell output";
      count[kind] += 1;
      box.setAttribute("tabindex", "0");
      box.setAttribute("role", "region");
      box.dataset.scrollBox = kind;
      box.setAttribute("aria-label", `${kind} ${count[kind]}, scrolls sideways`);
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
