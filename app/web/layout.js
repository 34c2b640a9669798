// Which arrangement fits the window, set as body[data-layout] for the stylesheets:
//   wide    chat list, chats and run view side by side
//   tabs    chat list beside the chats or the run view, one at a time (the top bar switches)
//   drawer  a phone: the chats or the run view full width, the chat list slides in over them

const WIDE_MIN = 1280;
const WIDE_SPLIT_MIN = 1680; // two chats beside the run view need this much to stay readable
const DRAWER_MAX = 767;

export class Layout {
  constructor() {
    this.body = document.body;
    this.menu = document.getElementById("menu");
    this.scrim = document.getElementById("scrim");
    this.sidebar = document.getElementById("sidebar");
    this.views = {
      chat: document.getElementById("show-chat"),
      run: document.getElementById("show-run"),
    };
    this.split = false;
    window.addEventListener("resize", () => this.update());
    this.menu.addEventListener("click", () => this.openDrawer());
    this.scrim.addEventListener("click", () => this.closeDrawer());
    document.getElementById("close-drawer").addEventListener("click", () => this.closeDrawer());
    document.addEventListener("keydown", (e) => {
      if (e.key === "Escape" && this.drawerOpen) this.closeDrawer();
    });
    for (const [view, button] of Object.entries(this.views)) {
      button.addEventListener("click", () => this.show(view));
    }
    this.update();
  }

  get mode() {
    return this.body.dataset.layout;
  }

  get drawerOpen() {
    return this.body.classList.contains("drawer-open");
  }

  setSplit(on) {
    this.split = on;
    this.update();
  }

  update() {
    const width = window.innerWidth;
    const wide = width >= (this.split ? WIDE_SPLIT_MIN : WIDE_MIN);
    this.body.dataset.layout = width <= DRAWER_MAX ? "drawer" : wide ? "wide" : "tabs";
    if (this.mode !== "drawer" && this.drawerOpen) this.closeDrawer();
    this.setMain();
  }

  /** "chat" or "run": which one the tabs and drawer layouts show. */
  show(view) {
    this.body.dataset.view = view;
    for (const [name, button] of Object.entries(this.views)) {
      button.setAttribute("aria-pressed", String(name === view));
    }
    this.setMain();
  }

  /** The run view shown in place of the chats (a <main>, hidden then) is the page's main
   * part; beside them it is a region of its own. */
  setMain() {
    const runview = document.getElementById("runview");
    const alone = this.mode !== "wide" && this.body.dataset.view === "run";
    if (alone) runview.setAttribute("role", "main");
    else runview.removeAttribute("role");
  }

  openDrawer() {
    this.body.classList.add("drawer-open");
    this.scrim.hidden = false;
    this.menu.setAttribute("aria-expanded", "true");
    for (const id of ["chats", "runview", "topbar"]) document.getElementById(id).inert = true;
    // The chat shown, else "New chat": not the search box, whose keyboard would cover a
    // phone's screen.
    const current = this.sidebar.querySelector(".thread[aria-current]");
    (current || this.sidebar.querySelector("#new-chat")).focus();
  }

  closeDrawer() {
    const wasOpen = this.drawerOpen;
    this.body.classList.remove("drawer-open");
    this.scrim.hidden = true;
    this.menu.setAttribute("aria-expanded", "false");
    for (const id of ["chats", "runview", "topbar"]) document.getElementById(id).inert = false;
    if (wasOpen && this.mode === "drawer") this.menu.focus();
  }

  /** A chat was picked or started: on a phone, back to it. */
  chatPicked() {
    if (this.drawerOpen) this.closeDrawer();
    this.show("chat");
  }
}
