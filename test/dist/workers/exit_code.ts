/** For the launcher test: rank 1 fails with code 7 (unless MODE=forever); the others would run forever. */
const rank = Number(process.env.RANK);
console.log(`hello from rank ${rank} of ${process.env.WORLD_SIZE} token=${process.env.FLOCKML_TOKEN ? 'set' : 'unset'}`);
if (rank === 1 && process.env.MODE !== 'forever') setTimeout(() => process.exit(7), 300);
else setInterval(() => undefined, 1000);
