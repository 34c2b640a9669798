// Light or dark: the system's setting unless the reader picks one (kept in localStorage).
// The stylesheets follow `color-scheme`, which `data-theme` pins (theme.css).

const KEY = "threadline.theme";

/** Apply the saved choice and keep `select` (System / Light / Dark) in step with it. */
export function setUpTheme(select) {
  const apply = (choice) => {
    if (choice === "light" || choice === "dark") document.documentElement.dataset.theme = choice;
    else delete document.documentElement.dataset.theme;
  };
  const saved = localStorage.getItem(KEY) || "system";
  apply(saved);
  select.value = saved;
  select.addEventListener("change", () => {
    if (select.value === "system") localStorage.removeItem(KEY);
    else localStorage.setItem(KEY, select.value);
    apply(select.value);
  });
}
