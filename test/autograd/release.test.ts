/**
 * What backward keeps alive: each gradient the engine makes is freed once its node has consumed it
 * (and what a node's backward makes on the way, at once), so the live tensors at the end of
 * backward do not grow with the graph's depth; a leaf takes a gradient nothing else refers to
 * without a copy, and never one it would share with another leaf, the caller or the graph.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import type { Tensor } from '../../lib/index';
import { values } from '../helpers/values';

const live = () => fl.memory().cpu.tensors;

/** Live tensors when the leaf's hook fires (the last step of backward), over those before backward. */
function inFlightAtLeaf(depth: number): number {
  return fl.tidy(() => {
    const x = fl.randn([32, 32]).requiresGrad_();
    let h: Tensor = x;
    for (let i = 0; i < depth; i++) h = h.mul(1.01).tanh();
    const loss = h.sum();
    const before = live();
    let at = -1;
    x.registerHook(() => void (at = live()));
    loss.backward();
    x.grad!.dispose();
    return at - before;
  });
}

test('the tensors alive when backward reaches the leaf do not grow with depth', () => {
  const shallow = inFlightAtLeaf(3);
  const deep = inFlightAtLeaf(30);
  // Only the gradient in flight (and the root's) remain: the same at depth 3 and 30. Kept until the
  // end of backward, 27 more layers would add at least 27 gradients and their temporaries.
  assert.is(deep, shallow);
  assert.ok(shallow <= 3, `${shallow} tensors in flight at the leaf`);
});

test('backward leaves no tensor of its own behind beyond the leaf gradients', () => {
  fl.tidy(() => {
    const w = fl.randn([16, 16]).requiresGrad_();
    const x = fl.randn([8, 16]);
    const loss = x.matmul(w).relu().matmul(w).sigmoid().mean();
    const before = live();
    loss.backward();
    assert.is(live(), before + 1, 'only w.grad is new');
    w.grad!.dispose();
  });
});

test('gradients match the closed form through a graph whose gradient is shared by two inputs', () => {
  const a = fl.tensor([1, 2, 3], { requiresGrad: true });
  const b = fl.tensor([4, 5, 6], { requiresGrad: true });
  // add passes one gradient object on to both inputs; then a reaches its leaf twice.
  const y = a.add(b).mul(a).sum();
  y.backward();
  assert.equal(values(a.grad!), [6, 9, 12]); // 2a + b
  assert.equal(values(b.grad!), [1, 2, 3]); // a
});

test('two leaves given one gradient object get their own storage', () => {
  const a = fl.tensor([1, 2, 3], { requiresGrad: true });
  const b = fl.tensor([4, 5, 6], { requiresGrad: true });
  a.add(b).mul(2).sum().backward();
  assert.ok(a.grad !== b.grad);
  fl.noGrad(() => a.grad!.copy_(fl.tensor([7, 7, 7])));
  assert.equal(values(a.grad!), [7, 7, 7]);
  assert.equal(values(b.grad!), [2, 2, 2], "writing one leaf's gradient leaves the other's");
});

test("the caller's gradient is neither freed nor taken by a leaf", () => {
  const x = fl.tensor([1, 2], { requiresGrad: true });
  const g = fl.tensor([3, 4]);
  x.add(1).backward(g); // add passes g straight to the leaf
  assert.not.ok(g.isDisposed);
  assert.ok(x.grad !== g);
  fl.noGrad(() => x.grad!.copy_(fl.tensor([0, 0])));
  assert.equal(values(g), [3, 4]);
});

test('a graph tensor never becomes a gradient that backward frees', () => {
  const x = fl.tensor([1, 2], { requiresGrad: true });
  const y = x.mul(3);
  const z = y.add(y);
  z.sum().backward();
  assert.not.ok(y.isDisposed);
  assert.not.ok(z.isDisposed);
  assert.equal(values(y), [3, 6]);
  assert.equal(values(x.grad!), [6, 6]);
});

test('an adopted leaf gradient accumulates over later backward passes, also with retainGraph', () => {
  const w = fl.tensor([1, -2, 3], { requiresGrad: true });
  const y = w.mul(w).sum(); // grad 2w, made by mul's backward: the leaf adopts it
  y.backward({ retainGraph: true });
  assert.equal(values(w.grad!), [2, -4, 6]);
  y.backward();
  assert.equal(values(w.grad!), [4, -8, 12]);
  w.mul(5).sum().backward();
  assert.equal(values(w.grad!), [9, -3, 17]);
});

test('a hook that replaces the gradient: the replacement is what flows on and accumulates', () => {
  const x = fl.tensor([1, 2], { requiresGrad: true });
  const y = x.mul(2);
  y.registerHook((g) => g.mul(10));
  let seen: number[] = [];
  x.registerHook((g) => void (seen = values(g)));
  y.sum().backward();
  assert.equal(seen, [20, 20]);
  assert.equal(values(x.grad!), [20, 20]);
});

test("a hook's replacement that the caller holds is neither freed nor taken by a leaf", () => {
  const x = fl.tensor([1, 2], { requiresGrad: true });
  const mine = fl.tensor([5, 6]);
  const y = x.mul(2);
  y.registerHook(() => mine);
  x.registerHook(() => mine);
  y.add(1).sum().backward();
  assert.not.ok(mine.isDisposed);
  assert.equal(values(mine), [5, 6]);
  assert.equal(values(x.grad!), [5, 6]);
  assert.ok(x.grad !== mine);
});

test.run();
