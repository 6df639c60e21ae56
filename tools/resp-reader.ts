/**
 * Just enough of the Redis protocol (RESP2 and RESP3) for the fault proxy: where one complete
 * value ends in a buffer, and the arguments of a client command. Test tooling only.
 */

const CRLF = 0x0d;

/** Offset just past the `\r\n` that ends the line starting at `from`, or -1 if the line is incomplete. */
function lineEnd(buffer: Buffer, from: number): number {
  const at = buffer.indexOf(CRLF, from);
  return at === -1 || at + 1 >= buffer.length ? -1 : at + 2;
}

/**
 * Length in bytes of the complete RESP value at `from`, or -1 when the buffer ends inside it.
 * Handles every RESP3 type; an attribute (`|`) is counted together with the value it annotates.
 */
export function respValueLength(buffer: Buffer, from = 0): number {
  if (from >= buffer.length) return -1;
  const end = lineEnd(buffer, from);
  if (end === -1) return -1;
  const type = String.fromCharCode(buffer[from]);
  const header = buffer.toString('latin1', from + 1, end - 2);
  switch (type) {
    case '+':
    case '-':
    case ':':
    case '_':
    case ',':
    case '#':
    case '(':
      return end - from;
    case '$':
    case '!':
    case '=': {
      const size = Number(header);
      if (size < 0) return end - from; // null bulk string
      const total = end + size + 2;
      return total > buffer.length ? -1 : total - from;
    }
    case '*':
    case '~':
    case '>':
    case '%':
    case '|': {
      const count = Number(header);
      const elements = count < 0 ? 0 : type === '%' || type === '|' ? count * 2 : count;
      let at = end;
      for (let i = 0; i < elements; i++) {
        const size = respValueLength(buffer, at);
        if (size === -1) return -1;
        at += size;
      }
      if (type === '|') {
        const annotated = respValueLength(buffer, at);
        return annotated === -1 ? -1 : at + annotated - from;
      }
      return at - from;
    }
    default:
      throw new Error(`not a RESP value: type byte ${JSON.stringify(type)} at offset ${from}`);
  }
}

/** True for a RESP3 push (`>`), which is not the reply to any command. */
export function isPush(buffer: Buffer, from: number): boolean {
  return buffer[from] === 0x3e;
}

/** The arguments of the client command (an array of bulk strings) at `from`; `length` is its size in bytes. */
export function readCommand(buffer: Buffer, from: number): { args: string[]; length: number } | undefined {
  const length = respValueLength(buffer, from);
  if (length === -1) return undefined;
  const args: string[] = [];
  let at = lineEnd(buffer, from);
  const count = Number(buffer.toString('latin1', from + 1, at - 2));
  for (let i = 0; i < count; i++) {
    const end = lineEnd(buffer, at);
    const size = Number(buffer.toString('latin1', at + 1, end - 2));
    args.push(buffer.toString('utf8', end, end + size));
    at = end + size + 2;
  }
  return { args, length };
}
