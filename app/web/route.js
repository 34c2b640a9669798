// The address of the chat in front: `#/threads/{id}`, plus `/at/{checkpoint}` when it shows
// a branch other than the newest, so that a reload or a shared link lands on that branch.

const PATTERN = /^#\/threads\/([\w-]+)(?:\/at\/([\w-]+))?$/;

/** {threadId, view} from the address; null when it names no thread. */
export function parseRoute(hash) {
  const match = hash.match(PATTERN);
  return match ? { threadId: match[1], view: match[2] || null } : null;
}

export function formatRoute(threadId, view) {
  if (!threadId) return "#/";
  return view ? `#/threads/${threadId}/at/${view}` : `#/threads/${threadId}`;
}
