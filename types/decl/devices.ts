/** The virtual CPU devices and events between their streams (cpp/bindings/devices.cc). */
import { group, hand } from './dsl';

export const devicesExports = group('devices', 'virtual CPU devices and events between their streams', [
  hand('cpuDeviceCount', null, '(): number', 'The number of virtual CPU devices; the first call fixes it.'),
  hand('setCpuDeviceCount', null, '(n: number): void', 'Sets the count before it is fixed; ERR_DEVICE afterwards.'),
  hand(
    'eventRecord',
    null,
    '(device: string): NativeEvent',
    'An event set once the work queued on `device` (a CPU device) so far has run.',
  ),
  hand('eventWait', null, '(e: NativeEvent, device: string): void', 'Work queued on `device` after this call waits for the event.'),
  hand('eventQuery', null, '(e: NativeEvent): boolean'),
  hand('eventSync', null, '(e: NativeEvent): Promise<void>', 'Resolves once the event is set.'),
]);
