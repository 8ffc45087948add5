// The phone's navigation drawer opens at the current page, not at the top of the guide.
document.addEventListener("DOMContentLoaded", () => {
  const toggle = document.querySelector("button.primary-toggle");
  if (!toggle) return;
  toggle.addEventListener("click", () => {
    // the theme moves the sidebar into its dialog on click: look for the link once it is there
    requestAnimationFrame(() => {
      const dialog = document.querySelector("dialog#pst-primary-sidebar-modal");
      const current = dialog && dialog.querySelector("a.current.reference.internal");
      if (current) current.scrollIntoView({block: "center"});
    });
  });
});
