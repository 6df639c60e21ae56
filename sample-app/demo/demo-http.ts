/** The demo's HTTP client: JSON calls to the service, and polling until a state is reached. */

export interface ApiResponse {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

export async function api(method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse> {
  const response = await fetch(url, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}

/** Calls `probe` every 100 ms until it returns a value, or gives up after `timeoutMs`. */
export async function poll<T>(probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T | undefined> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value !== undefined) return value;
    await sleep(100);
  }
  return undefined;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
