import { test } from 'uvu';
import * as assert from 'uvu/assert';
import * as fl from '../../lib/index';
import { native } from '../../lib/native';
import { close, expectError } from '../helpers/reference';
import { values } from '../helpers/values';
import { gradcheck, rnd } from '../helpers/gradcheck';

test('arithmetic in place: values, broadcasting of other, returns self', () => {
  const x = fl.tensor(
    [
      [1, 2, 3],
      [4, 5, 6],
    ],
    { dtype: 'f64' },
  );
  assert.is(x.add_(fl.tensor([1, 1, 1], { dtype: 'f64' }), 2), x);
  assert.equal(values(x), [3, 4, 5, 6, 7, 8]);
  x.sub_(1)
    .mul_(fl.tensor([[2], [3]], { dtype: 'f64' }))
    .div_(2);
  assert.equal(values(x), [2, 3, 4, 7.5, 9, 10.5]);
  x.clamp_(3, 9);
  assert.equal(values(x), [3, 3, 4, 7.5, 9, 9]);
  x.clamp_(fl.tensor([4, 0, 0], { dtype: 'f64' }));
  assert.equal(values(x), [4, 3, 4, 7.5, 9, 9]);
  x.zero_();
  assert.equal(values(x), [0, 0, 0, 0, 0, 0]);
  x.fill_(2.5);
  assert.equal(values(x), [2.5, 2.5, 2.5, 2.5, 2.5, 2.5]);
  expectError(() => x.add_(fl.zeros([3, 3], { dtype: 'f64' })), RangeError, 'ERR_SHAPE');
  expectError(() => fl.zeros([3], { dtype: 'f64' }).add_(fl.zeros([2, 3], { dtype: 'f64' })), RangeError, 'ERR_SHAPE', /\[2,3\].*\[3\]/);
});

test('dtype rules: the result must cast to self', () => {
  const i = fl.tensor([1, 2], { dtype: 'i64' });
  i.add_(3);
  assert.equal(values(i), [4, 5]);
  expectError(() => i.add_(0.5), TypeError, 'ERR_DTYPE', /f32 cannot be cast to self's dtype i64/);
  expectError(() => i.div_(2), TypeError, 'ERR_DTYPE');
  expectError(() => i.clamp_(0.5, 3), TypeError, 'ERR_DTYPE', /clamp_/);
  assert.equal([...values(i.clamp(0.5, 4.5))], [4, 4.5], 'fractional bounds promote an integer input, as torch');
  const f = fl.zeros([2]);
  f.add_(fl.ones([2], { dtype: 'f64' }));
  assert.equal([f.dtype, ...values(f)], ['f32', 1, 1]);
  expectError(() => fl.zeros([2], { dtype: 'bool' }).add_(1), TypeError, 'ERR_DTYPE', /bool/);
  assert.equal(values(i.clone().fill_(1.5)), [1, 1], 'a float value is truncated, as torch');
  expectError(() => i.uniform_(), TypeError, 'ERR_DTYPE');
});

test('copy_ broadcasts, casts and is recorded', () => {
  const d = fl.zeros([2, 3], { dtype: 'i64' });
  d.copy_(fl.tensor([1.7, -2.2, 3]));
  assert.equal(values(d), [1, -2, 3, 1, -2, 3]);
  expectError(() => d.copy_(fl.zeros([2])), RangeError, 'ERR_SHAPE');
  const src = fl.tensor([1, 2, 3], { dtype: 'f64', requiresGrad: true });
  const buf = fl.zeros([2, 3], { dtype: 'f64' });
  buf.copy_(src);
  assert.ok(buf.requiresGrad && !buf.isLeaf);
  buf
    .mul(
      fl.tensor(
        [
          [1, 2, 3],
          [4, 5, 6],
        ],
        { dtype: 'f64' },
      ),
    )
    .sum()
    .backward();
  assert.equal(values(src.grad!), [5, 7, 9]);
});

test('uniform_ and normal_ fill from the global generator', () => {
  fl.manualSeed(7);
  const u = fl.zeros([1000]).uniform_(2, 3);
  assert.ok(values(u).every((v) => v >= 2 && v < 3));
  fl.manualSeed(7);
  assert.equal(values(fl.zeros([1000]).uniform_(2, 3)), values(u), 'same seed, same values');
  const n = values(fl.zeros([20000], { dtype: 'f64' }).normal_(1, 2));
  const mean = n.reduce((a, b) => a + b, 0) / n.length;
  const sd = Math.sqrt(n.reduce((a, b) => a + (b - mean) ** 2, 0) / n.length);
  assert.ok(Math.abs(mean - 1) < 0.06 && Math.abs(sd - 2) < 0.06, `mean ${mean} sd ${sd}`);
  expectError(() => fl.zeros([2]).uniform_(3, 2), RangeError, 'ERR_RANGE');
  expectError(() => fl.zeros([2]).normal_(0, -1), RangeError, 'ERR_RANGE');
});

test('views share storage: writing a view changes its base', () => {
  const base = fl.zeros([2, 3]);
  base.reshape(6).add_(1);
  base.narrow(0, 1, 1).mul_(5);
  assert.equal(values(base), [1, 1, 1, 5, 5, 5]);
  base.unbind(0)[0].fill_(7);
  assert.equal(values(base), [7, 7, 7, 5, 5, 5]);
});

test('autograd: leaves that require grad refuse outside noGrad, allowed inside', () => {
  const w = fl.ones([3], { requiresGrad: true });
  expectError(() => w.add_(1), Error, 'ERR_AUTOGRAD', /add_: a leaf tensor/);
  expectError(() => w.zero_(), Error, 'ERR_AUTOGRAD', /fill_|zero_/);
  fl.noGrad(() => w.mul_(3));
  assert.equal(values(w), [3, 3, 3]);
  assert.ok(w.isLeaf && w.requiresGrad);
});

test('autograd: a tensor saved for backward and then modified in place makes backward throw, naming the op', () => {
  const w = fl.tensor([1, 2, 3], { requiresGrad: true });
  const h = w.mul(2);
  const y = h.pow(2); // pow saves h
  h.add_(1);
  expectError(() => y.sum().backward(), Error, 'ERR_AUTOGRAD', /add_/);
  const v = w.mul(1);
  const s = v.mul(v);
  fl.noGrad(() => v.zero_());
  expectError(() => s.sum().backward(), Error, 'ERR_AUTOGRAD', /fill_/);
});

test('autograd: in-place ops on non-leaves rebase the history (gradients check)', () => {
  const chains: [string, (x: fl.Tensor, o: fl.Tensor) => fl.Tensor][] = [
    ['add_', (x, o) => x.mul(1.5).add_(o, 0.5)],
    ['sub_', (x, o) => x.exp().sub_(o)],
    ['mul_', (x, o) => x.add(0).mul_(o).mul_(x)],
    ['div_', (x, o) => x.mul(2).div_(o.abs().add(1))],
    ['clamp_', (x, o) => x.mul(1).clamp_(-0.5, 0.7).add_(o)],
    ['clamp_ tensors', (x, o) => x.mul(1).clamp_(o.sub(0.5), o.add(0.5))],
    ['copy_', (x, o) => x.mul(1).copy_(o.exp()).mul(x)],
    ['zero_', (x, o) => x.mul(1).zero_().add_(o.mul(x))],
    ['fill_ tensor', (x, o) => x.mul(1).fill_(o.sum()).mul(x)],
  ];
  for (const [name, f] of chains)
    assert.is(
      gradcheck(([x, o]) => f(x, o), [rnd([2, 3]), rnd([3])]),
      null,
      name,
    );
  // The in-place result keeps its own gradFn and the same object.
  const x = fl.tensor([1, 2], { dtype: 'f64', requiresGrad: true });
  const h = x.mul(3);
  const same = h.add_(1);
  assert.is(same, h);
  assert.is(h.gradFn!.name, 'add');
  h.sum().backward();
  close(values(x.grad!), [3, 3]);
});

test('autograd: writing a view while recording is refused clearly; under noGrad it is a plain write', () => {
  const x = fl.tensor([1, 2, 3, 4], { requiresGrad: true });
  const h = x.mul(2);
  expectError(() => h.reshape(2, 2).add_(1), Error, 'ERR_AUTOGRAD', /view/);
  const buf = fl.zeros([2, 2]);
  expectError(() => buf.narrow(0, 0, 1).copy_(x.narrow(0, 0, 2)), Error, 'ERR_AUTOGRAD', /view/);
  fl.noGrad(() => buf.reshape(4).copy_(x));
  assert.equal(values(buf), [1, 2, 3, 4]);
});

test('a permute that moves only size-1 dims is a view: writes through it count against its base', () => {
  const x = fl.tensor([[[1], [2], [3]]], { requiresGrad: true });
  const h = x.mul(2);
  const y = h.pow(2); // pow saves h
  const p = h.permute([2, 1, 0]); // [1, 3, 1] -> [1, 3, 1] with the size-1 dims swapped: the same bytes
  expectError(() => p.add_(1), Error, 'ERR_AUTOGRAD', /view/);
  fl.noGrad(() => p.add_(1));
  assert.equal(values(h), [3, 5, 7], 'the write reached the base');
  expectError(() => y.sum().backward(), Error, 'ERR_AUTOGRAD', /pow.*add_/);
  // A permute that moves data is a copy: writing it leaves the base and its graph alone.
  const z = fl.tensor(
    [
      [1, 2],
      [3, 4],
    ],
    { requiresGrad: true },
  );
  const hz = z.mul(1);
  const yz = hz.pow(2);
  fl.noGrad(() => hz.permute([1, 0]).add_(1));
  yz.sum().backward();
  assert.equal(values(z.grad!), [2, 4, 6, 8]);
});

test("add_, sub_, mul_, div_ by a tensor of self's dtype write into self: no temporary, same values", async () => {
  for (const dtype of ['f32', 'f64', 'bf16', 'f16'] as const) {
    const base = fl.randn([64, 256]).to(dtype);
    const row = fl.randn([256]).to(dtype);
    const full = fl.randn([64, 256]).to(dtype).abs().add(0.5);
    const cases: [string, (t: fl.Tensor) => fl.Tensor, (t: fl.Tensor) => fl.Tensor][] = [
      ['add_', (t) => t.add_(row), (t) => t.add(row)],
      ['sub_', (t) => t.sub_(full), (t) => t.sub(full)],
      ['mul_', (t) => t.mul_(row), (t) => t.mul(row)],
      ['div_', (t) => t.div_(full), (t) => t.div(full)],
    ];
    for (const [name, inPlace, outOfPlace] of cases) {
      const x = base.clone();
      const expected = values(outOfPlace(base));
      await fl.sync();
      fl.resetPeakMemory();
      const before = fl.memory().cpu.bytes;
      assert.is(inPlace(x), x);
      fl.syncSync();
      assert.is(fl.memory().cpu.peakBytes, before, `${dtype} ${name}: no temporary`);
      assert.equal(values(x), expected, `${dtype} ${name}`);
    }
  }
});

test("in place by a view of part of self's own storage reads the old values (no write-before-read)", () => {
  const x = fl.arange(0, 8).to('f32').reshape([2, 4]);
  const expected = values(x.add(x.narrow(0, 0, 1)));
  x.add_(x.narrow(0, 0, 1)); // row 0 is also what is added to row 1
  assert.equal(values(x), expected);
  const y = fl.arange(0, 8).to('f32').reshape([2, 4]);
  y.mul_(y); // element for element: written in place
  assert.equal(values(y), [0, 1, 4, 9, 16, 25, 36, 49]);
});

test('fill_ and zero_ outside autograd write into self: no temporary, every dtype, infs and NaNs overwritten', async () => {
  for (const dtype of ['f32', 'f64', 'bf16', 'f16', 'i32', 'i64', 'u8', 'bool'] as const) {
    const x = fl.tensor([1, 0, 3, 4, 5, 6]).reshape([2, 3]).to(dtype);
    if (dtype === 'f32') x.copy_(fl.tensor([Number.POSITIVE_INFINITY, Number.NaN, -1, 2, 3, 4]).reshape([2, 3]));
    await fl.sync();
    fl.resetPeakMemory();
    const before = fl.memory().cpu.bytes;
    assert.is(x.zero_(), x);
    fl.syncSync();
    assert.is(fl.memory().cpu.peakBytes, before, `${dtype} zero_: no temporary`);
    assert.equal(values(x), [0, 0, 0, 0, 0, 0], dtype);
    x.fill_(dtype === 'bool' ? true : 7);
    assert.equal(values(x), Array(6).fill(dtype === 'bool' ? 1 : 7), `${dtype} fill_`);
  }
  // A view's fill touches only its own part of the storage.
  const base = fl.arange(0, 6).to('f32');
  base.narrow(0, 2, 3).fill_(-1);
  assert.equal(values(base), [0, 1, -1, -1, -1, 5]);
});

test('native fill_ and full re-validate the value against an integer dtype', () => {
  const n = native as unknown as {
    fill_(self: unknown, v: number): void;
    full(shape: number[], dtype: string, device: string, v: number): unknown;
  };
  const x = fl.zeros([2], { dtype: 'i32' });
  expectError(() => n.fill_(x.handle, 2 ** 31), RangeError, 'ERR_RANGE', /fill_: value 2147483648 is out of range for i32/);
  expectError(() => n.fill_(fl.zeros([2], { dtype: 'u8' }).handle, Number.NaN), RangeError, 'ERR_RANGE', /fill_.*u8/);
  expectError(() => n.full([2], 'i64', 'cpu', Number.POSITIVE_INFINITY), RangeError, 'ERR_RANGE', /full.*i64/);
  assert.equal(values(x), [0, 0], 'nothing was written');
  n.fill_(x.handle, -2.7); // fractions truncate toward zero, as fill_ and torch do
  assert.equal(values(x), [-2, -2]);
});

test('native binary_ re-validates its operands', () => {
  const x = fl.zeros([2, 3]);
  const n = native as unknown as { binary_(op: string, a: unknown, b: unknown): boolean };
  expectError(() => n.binary_('add', x.handle, fl.zeros([2, 3], { dtype: 'f64' }).handle), TypeError, 'ERR_DTYPE', /binary_.*f32 and f64/);
  expectError(() => n.binary_('add', x.handle, fl.zeros([3, 3]).handle), RangeError, 'ERR_SHAPE', /binary_/);
  expectError(() => n.binary_('eq', x.handle, fl.zeros([2, 3]).handle), TypeError, 'ERR_ARG', /comparison/);
  expectError(() => n.binary_('add', fl.zeros([1, 3]).handle, x.handle), RangeError, 'ERR_SHAPE', /self's shape \[1,3\]/);
});

test.run();
